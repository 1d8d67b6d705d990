package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/drwatch/drwatch/failover"
	"github.com/goccy/go-yaml"
)

// outputFormat is -o: table (for humans), json or yaml (for scripts).
type outputFormat string

func (o outputFormat) check() error {
	switch o {
	case "table", "json", "yaml":
		return nil
	}
	return usageError{fmt.Errorf("-o must be table, json or yaml, got %q", string(o))}
}

// structured writes v as JSON or YAML (the field names are the JSON ones).
func structured(w io.Writer, format outputFormat, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if format == "yaml" {
		if b, err = yaml.JSONToYAML(b); err != nil {
			return err
		}
	} else {
		b = append(b, '\n')
	}
	_, err = w.Write(b)
	return err
}

// logText is text that came from the replicated log or a remote error
// (reasons, actors, details) made safe to print: every control character
// becomes a visible escape, so an entry older than the API's text rule can
// neither forge a table row nor drive the operator's terminal.
func logText(s string) string { return failover.EscapeText(s) }

func unixTime(ns int64) string {
	if ns == 0 {
		return "-"
	}
	return time.Unix(0, ns).UTC().Format(time.RFC3339)
}

// ago says how long before now ns was, to the second in Go's duration form
// ("1m0s ago"), or "never". It is not the status page's ago, which rounds
// to two units for people ("4m 10s ago", "just now"): the CLI prints a form
// time.ParseDuration reads back.
func ago(ns int64, now time.Time) string {
	if ns == 0 {
		return "never"
	}
	d := now.Sub(time.Unix(0, ns))
	if d < 0 {
		d = 0
	}
	return d.Round(time.Second).String() + " ago"
}

func join(s []string) string {
	if len(s) == 0 {
		return "-"
	}
	return strings.Join(s, ",")
}
