package config

import (
	"fmt"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// MaxDepth bounds how deeply collections may nest. drwatch's own schema
// nests about eight levels; the bound is checked on the tokens, before the
// parser runs, because goccy/go-yaml's parser is quadratic in nesting depth
// (40,000 levels of flow brackets took 2.5 GB).
const MaxDepth = 64

// MaxValues bounds the number of values the document holds once every
// alias and merge key is expanded, so that a few lines of anchors cannot make
// the decoder build an exponentially large value ("billion laughs").
const MaxValues = 50_000

// checkTokens refuses nesting deeper than MaxDepth and a node carrying more
// than one anchor or tag, looking only at the token stream. The block depth
// is estimated from the columns of block sequence entries and mapping keys;
// the exact depth is checked again on the AST by checkExpansion.
func checkTokens(tokens token.Tokens) *Problem {
	flow := 0
	var block []int // columns of the open block collections
	properties := 0
	for i, tk := range tokens {
		if i > 0 && tokens[i-1].Type == token.AnchorType {
			continue // the anchor's name
		}
		switch tk.Type {
		case token.AnchorType, token.TagType:
			properties++
			// YAML allows one anchor and one tag per node.
			if properties > 2 {
				return tokenProblem(tk, "more than one anchor or tag on one value")
			}
			continue
		case token.CommentType:
			continue
		}
		properties = 0
		switch tk.Type {
		case token.SequenceStartType, token.MappingStartType:
			flow++
		case token.SequenceEndType, token.MappingEndType:
			flow = max(flow-1, 0)
		case token.SequenceEntryType, token.MappingValueType:
			if flow > 0 {
				break
			}
			col := tk.Position.Column
			if tk.Type == token.MappingValueType && tk.Prev != nil {
				col = tk.Prev.Position.Column // the key's column
			}
			for len(block) > 0 && block[len(block)-1] > col {
				block = block[:len(block)-1]
			}
			if len(block) == 0 || block[len(block)-1] < col {
				block = append(block, col)
			}
		}
		if flow+len(block) > MaxDepth {
			return tokenProblem(tk, fmt.Sprintf("nested deeper than %d levels", MaxDepth))
		}
	}
	return nil
}

func tokenProblem(tk *token.Token, msg string) *Problem {
	return &Problem{Line: tk.Position.Line, Column: tk.Position.Column, Msg: msg}
}

// expansion measures a document as the decoder will see it, with every
// alias replaced by its anchor's value, without building it: the size and
// height of each anchor are computed once and reused at each alias, so the
// check is linear in the document. It also records which anchor each alias
// names, in document order, for the walker.
type expansion struct {
	anchors map[string]*ast.AnchorNode // latest definition of each name so far
	sizes   map[*ast.AnchorNode]measure
	open    map[*ast.AnchorNode]bool // being measured: an alias to it is a cycle
	targets map[*ast.AliasNode]ast.Node
	problem *Problem
}

type measure struct{ size, height int }

// checkExpansion refuses a document nested deeper than MaxDepth or holding
// more than MaxValues values once aliases and merge keys are expanded, and
// returns the value each alias resolves to.
func checkExpansion(body ast.Node) (map[*ast.AliasNode]ast.Node, *Problem) {
	e := &expansion{
		anchors: map[string]*ast.AnchorNode{},
		sizes:   map[*ast.AnchorNode]measure{},
		open:    map[*ast.AnchorNode]bool{},
		targets: map[*ast.AliasNode]ast.Node{},
	}
	e.measure(body)
	return e.targets, e.problem
}

func (e *expansion) fail(n ast.Node, msg string) measure {
	if e.problem == nil {
		p := tokenPos(n)
		e.problem = &Problem{Line: p.line, Column: p.col, Msg: msg}
	}
	return measure{}
}

func (e *expansion) measure(n ast.Node) measure {
	if n == nil || e.problem != nil {
		return measure{}
	}
	switch t := n.(type) {
	case *ast.AnchorNode:
		e.anchors[anchorName(t.Name)] = t
		e.open[t] = true
		m := e.measure(t.Value)
		delete(e.open, t)
		e.sizes[t] = m
		return m
	case *ast.AliasNode:
		a := e.anchors[anchorName(t.Value)]
		if a == nil {
			return measure{size: 1} // the parser or decoder reports it
		}
		if e.open[a] {
			return e.fail(t, fmt.Sprintf("alias *%s is inside its own anchor", anchorName(t.Value)))
		}
		e.targets[t] = a.Value
		return e.sizes[a]
	case *ast.TagNode:
		return e.measure(t.Value)
	case *ast.MappingKeyNode:
		return e.collection(n, 0, t.Value)
	case *ast.MappingNode:
		children := make([]ast.Node, len(t.Values))
		for i, v := range t.Values {
			children[i] = v
		}
		return e.collection(n, 0, children...)
	case *ast.MappingValueNode:
		return e.collection(n, 1, t.Key, t.Value)
	case *ast.SequenceNode:
		return e.collection(n, 1, t.Values...)
	}
	return measure{size: 1}
}

// collection measures a node with children; levels is how much nesting it
// adds (a mapping adds one through each of its key-value pairs).
func (e *expansion) collection(n ast.Node, levels int, children ...ast.Node) measure {
	m := measure{size: 1}
	for _, c := range children {
		cm := e.measure(c)
		if e.problem != nil {
			return measure{}
		}
		m.size += cm.size
		m.height = max(m.height, cm.height+levels)
		if m.size > MaxValues {
			msg := fmt.Sprintf("more than %d values once aliases and merge keys are expanded", MaxValues)
			if a, ok := c.(*ast.AliasNode); ok {
				msg = fmt.Sprintf("alias *%s: %s", anchorName(a.Value), msg)
			}
			return e.fail(c, msg)
		}
		if m.height > MaxDepth {
			return e.fail(c, fmt.Sprintf("nested deeper than %d levels", MaxDepth))
		}
	}
	return m
}

func anchorName(n ast.Node) string {
	if n == nil || n.GetToken() == nil {
		return ""
	}
	return n.GetToken().Value
}
