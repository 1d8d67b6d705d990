package api

import "html/template"

// pageCSS is inlined into the page at parse time (CSP: style-src with the
// response's nonce), so html/template treats it as trusted template text. It uses only classes, never style attributes, which a strict CSP
// would refuse.
const pageCSS = `
:root{--bg:#f6f7f9;--card:#fff;--fg:#1b1f24;--muted:#5b6470;--line:#d9dde3;
--up:#16794a;--up-bg:#e3f4ea;--down:#b42318;--down-bg:#fde8e6;--warn:#8a5a00;--warn-bg:#fff3d6;
--unk:#5b6470;--unk-bg:#eceef1;--man:#1d4ed8;--man-bg:#e4ecfd;--primary:#1d4ed8;--backup:#8a5a00;
--mono:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace}
@media (prefers-color-scheme:dark){:root{--bg:#0f1216;--card:#171b21;--fg:#e6e9ee;--muted:#9aa4b1;--line:#2a313a;
--up:#4ade80;--up-bg:#12301f;--down:#ff7b6e;--down-bg:#3a1512;--warn:#f5c451;--warn-bg:#33270b;
--unk:#9aa4b1;--unk-bg:#232a33;--man:#8fb0ff;--man-bg:#18243f;--primary:#8fb0ff;--backup:#f5c451}}
*{box-sizing:border-box}
html{-webkit-text-size-adjust:100%}
body{margin:0;background:var(--bg);color:var(--fg);font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif}
header.top{display:flex;flex-wrap:wrap;gap:.25rem 1rem;align-items:baseline;padding:.6rem 1rem;border-bottom:1px solid var(--line);background:var(--card)}
header.top h1{font-size:1.05rem;margin:0;letter-spacing:.02em}
header.top .meta{color:var(--muted);font-size:.85rem}
#live{margin-left:auto;font-size:.8rem;color:var(--muted)}
#live.lost{color:#fff;background:var(--down);font-weight:700;padding:.15rem .5rem;border-radius:6px}
main.lost{opacity:.5;filter:grayscale(.7)}
main{max-width:78rem;margin:0 auto;padding:1rem;display:grid;gap:1rem}
section{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:.9rem 1rem;min-width:0}
section>h2{font-size:.8rem;text-transform:uppercase;letter-spacing:.08em;color:var(--muted);margin:0 0 .6rem}
.alarm{border:2px solid var(--down);background:var(--down-bg);color:var(--fg)}
.alarm>h2{color:var(--down);font-size:1.15rem;text-transform:none;letter-spacing:0;margin:0 0 .3rem}
.alarm ul{margin:.2rem 0 0;padding-left:1.2rem}
.banner{display:grid;gap:.35rem}
.banner .active{font-size:1.6rem;font-weight:700;line-height:1.2}
.site-primary{color:var(--primary)}.site-backup{color:var(--backup)}.site-unknown{color:var(--unk)}
.muted{color:var(--muted)}.small{font-size:.85rem}.mono{font-family:var(--mono);font-size:.85em;overflow-wrap:anywhere}
.chips{display:flex;flex-wrap:wrap;gap:.4rem;align-items:center}
.pill{display:inline-block;padding:.05rem .5rem;border-radius:999px;font-size:.8rem;font-weight:600;white-space:nowrap}
.ok,.up{color:var(--up);background:var(--up-bg)}.down{color:var(--down);background:var(--down-bg)}
.warn{color:var(--warn);background:var(--warn-bg)}.unknown,.none,.minor{color:var(--unk);background:var(--unk-bg)}
.manual{color:var(--man);background:var(--man-bg)}
.note{padding:.55rem .75rem;border-radius:8px;font-weight:500}
.sites{display:grid;grid-template-columns:repeat(auto-fit,minmax(17rem,1fr));gap:1rem}
.site h3{margin:0 0 .3rem;font-size:1.05rem;display:flex;gap:.5rem;align-items:center}
.site .tally{font-size:1.05rem;font-weight:600}
.voters{margin:.35rem 0 0;display:flex;flex-wrap:wrap;gap:.3rem .8rem;font-size:.85rem}
.scroll{overflow-x:auto;-webkit-overflow-scrolling:touch}
table{border-collapse:collapse;width:100%;font-size:.88rem}
th,td{text-align:left;vertical-align:top;padding:.4rem .5rem;border-bottom:1px solid var(--line)}
th{font-weight:600;color:var(--muted);font-size:.78rem}
.matrix th:first-child,.matrix td:first-child{position:sticky;left:0;background:var(--card);z-index:1}
.matrix td.c{min-width:9.5rem}
.matrix td.w{min-width:10rem}
.matrix .votes{display:block}
.matrix .st{font-weight:700;font-size:.8rem;padding:0 .35rem;border-radius:4px}
.matrix .err{display:block;color:var(--down);font-size:.78rem;overflow-wrap:anywhere;margin-top:.15rem}
.matrix .stale{opacity:.55}
.matrix .stale .st::after{content:" stale"}
tr.abstain td:first-child{box-shadow:inset 3px 0 var(--warn)}
.strip{display:flex;gap:1px;margin-top:.3rem;height:.7rem}
.strip i{flex:0 0 .32rem;border-radius:1px}
.strip i.ok{background:var(--up)}.strip i.fail{background:var(--down)}
.crit{font-size:.7rem;color:var(--muted)}
.dns .rr{font-family:var(--mono);font-size:.82rem;display:block;overflow-wrap:anywhere}
.inc{border-top:1px solid var(--line);padding:.5rem 0}
.inc:first-of-type{border-top:0}
.inc summary{cursor:pointer;display:flex;flex-wrap:wrap;gap:.2rem .6rem;align-items:baseline;list-style:none}
.inc summary::-webkit-details-marker{display:none}
.inc summary::before{content:"▸";color:var(--muted)}
.inc[open] summary::before{content:"▾"}
.inc .title{font-weight:600}
.inc.minorline{font-size:.85rem;color:var(--muted);padding:.3rem 0 .3rem 1rem}
.inc .body{padding:.4rem 0 0 1rem;display:grid;gap:.35rem}
.timeline{display:flex;flex-wrap:wrap;gap:.3rem;font-size:.82rem}
.timeline span{border:1px solid var(--line);border-radius:6px;padding:.1rem .45rem}
dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:.2rem .8rem;margin:0;font-size:.9rem}
dl.kv dt{color:var(--muted)}dl.kv dd{margin:0;overflow-wrap:anywhere}
footer{max-width:78rem;margin:0 auto;padding:0 1rem 2rem;color:var(--muted);font-size:.8rem}
footer a{color:inherit}
@media (max-width:40rem){body{font-size:14px}main{padding:.5rem;gap:.6rem}section{padding:.7rem}.banner .active{font-size:1.3rem}
dl.kv{grid-template-columns:1fr}dl.kv dt{margin-top:.3rem}
.matrix,.matrix tbody,.matrix tr,.matrix td{display:block;width:100%}
.matrix thead{display:none}
.matrix tr{border:1px solid var(--line);border-radius:8px;margin-bottom:.6rem;padding:.2rem 0}
.matrix td{border-bottom:1px dashed var(--line)}.matrix td:last-child{border-bottom:0}
.matrix td:first-child{position:static}
.matrix td.c::before{content:attr(data-label);display:block;font-size:.75rem;color:var(--muted)}}
`

// groupCSS styles the overview of failover groups. It is a second style
// element, sent only with groups, so the page of a cluster without them
// stays byte for byte as it was. Cells wrap and names break anywhere, so
// 50 groups with 63-character names fit a phone.
const groupCSS = `
.groups{list-style:none;margin:0;padding:0;display:grid;grid-template-columns:repeat(auto-fill,minmax(10.5rem,1fr));gap:.45rem}
.groups li{min-width:0}
.groups a{display:flex;flex-direction:column;gap:.15rem;height:100%;padding:.4rem .55rem;border:1px solid var(--line);border-left:4px solid var(--up);border-radius:8px;color:inherit;text-decoration:none;min-width:0}
.groups a:hover,.groups a:focus-visible{border-color:var(--fg)}
.groups .g-warn a{border-left-color:var(--warn)}
.groups .g-down a{border-left-color:var(--down);background:var(--down-bg)}
.groups a[aria-current]{outline:2px solid var(--man);outline-offset:1px}
.groups .gname{font-weight:700;overflow-wrap:anywhere}
.groups .gsite{font-weight:600}
.groups .chips{gap:.25rem}
.groups .pill{white-space:normal;overflow-wrap:anywhere}
.groups .gsites{font-size:.75rem;color:var(--muted)}
.grouphead{display:flex;flex-wrap:wrap;gap:.2rem 1rem;align-items:baseline;margin:0 0 .6rem}
.grouphead h2{font-size:.8rem;text-transform:uppercase;letter-spacing:.08em;color:var(--muted);margin:0}
@media (max-width:40rem){.groups{grid-template-columns:repeat(auto-fill,minmax(8.5rem,1fr))}}
`

// pageScript refreshes the main container in place, without a full page
// load, and says loudly when it cannot: a frozen page must not look live.
// It keeps open <details> open across refreshes.
const pageScript = `
(function(){
  var main=document.getElementById("main"), live=document.getElementById("live");
  var every=parseInt(main.getAttribute("data-refresh-ms"),10)||2000, lastOK=Date.now();
  function tick(){
    var ctl=new AbortController(), timer=setTimeout(function(){ctl.abort();},Math.max(every,3000));
    fetch("?partial=1",{cache:"no-store",signal:ctl.signal,headers:{"Accept":"text/html"}}).then(function(r){
      if(!r.ok){throw new Error("HTTP "+r.status);}
      return r.text();
    }).then(function(html){
      var open={};
      main.querySelectorAll("details[open]").forEach(function(d){if(d.id){open[d.id]=true;}});
      var closed={};
      main.querySelectorAll("details:not([open])").forEach(function(d){if(d.id){closed[d.id]=true;}});
      main.innerHTML=html;
      main.querySelectorAll("details").forEach(function(d){
        if(open[d.id]){d.open=true;}else if(closed[d.id]){d.open=false;}
      });
      var t=document.getElementById("title");
      if(t){document.title=t.getAttribute("data-title");}
      lastOK=Date.now();
      live.textContent="live · refreshed every "+(every/1000)+" s";
      live.className="";
      main.classList.remove("lost");
    }).catch(function(e){
      var s=Math.round((Date.now()-lastOK)/1000);
      live.textContent="NOT UPDATING: this node has not answered for "+s+" s ("+e.message+"); what you see may be out of date";
      live.className="lost";
      main.classList.add("lost");
    }).finally(function(){clearTimeout(timer);setTimeout(tick,every);});
  }
  live.textContent="live · refreshed every "+(every/1000)+" s";
  setTimeout(tick,every);
})();
`

var pageTemplate = template.Must(template.New("page").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="referrer" content="no-referrer">
<title>{{template "title" .}}</title>
<noscript><meta http-equiv="refresh" content="5"></noscript>
<style nonce="{{.Nonce}}">` + pageCSS + `</style>{{if .Groups}}<style nonce="{{.Nonce}}">` + groupCSS + `</style>{{end}}
</head>
<body>
<header class="top">
<h1>drwatch</h1>
<span class="meta">served by <b>{{.ServedBy}}</b></span>
<span id="live">auto-refresh every 5 s (no JavaScript)</span>
</header>
<main id="main" data-refresh-ms="{{.RefreshMS}}">
{{template "main" .}}
</main>
<footer>Machine-readable: <a href="{{.Root}}api/v1/status">/api/v1/status</a> · <a href="{{.Root}}api/v1/summary.json">/api/v1/summary.json</a> · <a href="{{.Root}}metrics">/metrics</a> · badges <a href="{{.Root}}badge/active.svg">active</a>, <a href="{{.Root}}badge/primary.svg">primary</a></footer>
<script nonce="{{.Nonce}}">` + pageScript + `</script>
</body>
</html>
{{define "title"}}{{if .Alarm}}⚠ {{.Alarm}} · {{end}}drwatch · {{if .Groups}}{{.Groups.Title}}{{else}}active: {{.Active}}{{end}}{{end}}
{{define "main"}}
<span hidden id="title" data-title="{{template "title" .}}"></span>
{{- if .Alarm}}
<section class="alarm" role="alert" id="alarm">
<h2>⚠ {{.Alarm}}</h2>
<ul>{{range .Warnings}}<li>{{.}}</li>{{end}}</ul>
</section>
{{- end}}
{{- if .Groups}}
<section aria-label="failover groups" id="groups">
<div class="grouphead"><h2>Failover groups</h2><span class="small" id="groups-summary">{{.Groups.Summary}}</span></div>
<ul class="groups">
{{- range .Groups.Cells}}
<li class="g-{{.Class}}" id="{{.ID}}"><a href="{{.Href}}"{{if .Current}} aria-current="page"{{end}}><span class="gname">{{.Name}}</span><span class="small">on the <span class="gsite {{.ActiveClass}}">{{.Active}}</span></span>{{if .Chips}}<span class="chips">{{range .Chips}}<span class="pill {{.Class}}">{{.Label}}</span>{{end}}</span>{{end}}<span class="gsites">{{.Sites}}</span></a></li>
{{- end}}
</ul>
<p class="small muted">Each cell is one group: where its traffic goes, what holds or threatens it (a countdown to an automatic move, paused, blocked after a flip, a withheld flip), and each site's verdict at quorum. A red frame needs a look now, an amber one holds traffic on the backup or holds decisions back. The group framed in blue is the one shown below; each links to its own page.</p>
</section>
{{- end}}
<section class="banner" aria-label="active site">
<h2>{{if .Groups}}Group {{.Groups.Current}}: active site{{else}}Active site{{end}}</h2>
<div class="active">Traffic goes to the <span class="{{.ActiveClass}}">{{.Active}}</span> site</div>
{{- if .Distrust}}<div class="small down">as last known by {{.ServedBy}}, whose view may be out of date: see the warning above</div>{{end}}
<div class="muted">{{.Since}} · <span class="small">{{.SinceAbs}}</span></div>
<div class="chips"><span class="muted small">mode</span> <span class="pill {{.ModeClass}}" id="mode">{{.Mode}}</span>{{if .ModeDetail}} <span class="small muted">{{.ModeDetail}}</span>{{end}}</div>
<div class="small"><span class="muted">last decision</span> <span id="last-decision">{{.Decision}}</span></div>
<div class="small"><span class="muted">drill</span> <span class="pill {{.DrillClass}}" id="drill">{{.Drill}}</span></div>
<div class="small muted">decision generation {{.Gen}} · fence <span class="mono">{{.Fence}}</span> · served by {{.ServedBy}} at {{.ServedAt}}{{if .DataAge}} · data {{.DataAge}} old{{end}} · leader {{if .Leader}}{{.Leader}}{{else}}<b class="down">none</b>{{end}}</div>
</section>
{{- if .Pending}}
<div class="note {{.Pending.Class}}" id="pending" role="status">{{.Pending.Text}}</div>
{{- end}}
{{- if .Withheld}}
<div class="note warn" id="withheld">{{.Withheld}}</div>
{{- end}}
{{- if .Failback}}
<div class="note manual">{{.Failback}}</div>
{{- end}}
<div class="sites">
{{- range .Sites}}
<section class="site" id="site-{{.Name}}">
<h3>{{.Name}} site <span class="pill {{.Class}}">{{.Verdict}}</span>{{if .Active}} <span class="pill manual">active</span>{{end}}</h3>
<div class="tally">{{.Text}}</div>
<div class="voters">{{range .Voters}}<span><span class="pill {{.Class}}">{{.Label}}</span> {{.Nodes}}</span>{{end}}</div>
</section>
{{- end}}
</div>
<section aria-label="vantage matrix">
<h2>What each watcher sees</h2>
{{- if .Nodes}}
<div class="scroll"><table class="matrix" id="matrix">
<thead><tr><th>watcher</th>{{range .Probes}}<th>{{.Site}} / {{.Probe}}{{if .Critical}} <span class="crit">critical</span>{{end}}</th>{{end}}</tr></thead>
<tbody>
{{- range .Nodes}}
<tr class="{{if ne .Class "ok"}}abstain{{end}}" id="node-{{.Node}}">
<td class="w"><b>{{.Node}}</b> <span class="pill {{.Class}}">{{.Status}}</span><span class="small muted votes">votes primary {{.Primary}}, backup {{.Backup}}</span>{{if .LastAt}}<span class="small muted votes">{{.LastAt}}</span>{{end}}{{range .Notes}}<span class="small warn votes">{{.}}</span>{{end}}</td>
{{- range .Cells}}
<td class="c{{if .Stale}} stale{{end}}" data-label="{{.Label}}"{{if .Title}} title="{{.Title}}"{{end}}><span class="st {{.Class}}">{{.State}}</span>{{if .Latency}} <span class="small">{{.Latency}}</span>{{end}}{{if .Streak}} <span class="small muted">{{.Streak}}</span>{{end}}{{if .Error}}<span class="err">{{.Error}}</span>{{end}}{{if .History}}<div class="strip" aria-label="recent results, oldest first">{{range .History}}<i class="{{.}}"></i>{{end}}</div>{{end}}</td>
{{- end}}
</tr>
{{- end}}
</tbody></table></div>
<p class="small muted">Each cell: state, latency of the last run, consecutive fails or oks, the last error; the strip shows up to 20 recent results, oldest on the left. Faded cells are stale and count as UNKNOWN.</p>
{{- else}}
<p class="muted">No watchers are configured yet (no policy).</p>
{{- end}}
</section>
<section class="dns" aria-label="dns" id="dns">
<h2>DNS</h2>
<div class="chips">{{if .DNS.Unchecked}}<span class="pill unknown">not checked yet</span>{{else}}<span class="pill {{if .DNS.Match}}ok{{else}}down{{end}}">{{if .DNS.Match}}every server serves the desired records{{else}}records do not match the desired state{{end}}</span>{{end}}
<span class="small muted">{{.DNS.Checked}} · check of gen {{.DNS.Gen}} · fence <span class="mono">{{.DNS.Fence}}</span> · {{if .DNS.Done}}decision verified{{else}}decision not verified yet{{end}}</span></div>
{{- if .DNS.Error}}<div class="note down small">{{.DNS.Error}}</div>{{end}}
{{- if .DNS.Recon}}<div class="small">{{.DNS.Recon}}{{if .DNS.ReconErr}} · <span class="down">{{.DNS.ReconErr}}</span>{{end}}</div>{{end}}
<div class="scroll"><table>
<thead><tr><th>server</th><th>answer</th><th>records</th></tr></thead>
<tbody>
<tr><td><b>desired</b></td><td></td><td>{{range .DNS.Desired}}<span class="rr">{{.}}</span>{{else}}<span class="muted">none</span>{{end}}</td></tr>
{{- range .DNS.Servers}}
<tr><td class="mono">{{.Server}}</td><td>{{if .Matched}}<span class="pill ok">matches</span>{{else if .Error}}<span class="pill unknown">error</span>{{else}}<span class="pill down">differs</span>{{end}}</td>
<td>{{range .Got}}<span class="rr">{{.}}</span>{{else}}{{if not .Error}}<span class="muted">no records</span>{{end}}{{end}}{{if .Error}}<span class="small down">{{.Error}}</span>{{end}}</td></tr>
{{- end}}
</tbody></table></div>
</section>
{{- if .Clusters}}
<section aria-label="cluster health" id="cluster-health">
<h2>Cluster health</h2>
<div class="sites">
{{- range .Clusters}}
<div class="site" id="cluster-{{.Site}}">
<h3>{{.Site}} cluster <span class="pill {{.Class}}">{{.Verdict}}</span></h3>
{{- if .Read}}<div class="small muted">{{.Read}}</div>{{end}}
{{- if .NotConfigured}}<p class="muted small">{{.NotConfigured}}</p>{{end}}
{{- if .Rows}}
<dl class="kv">{{range .Rows}}<dt>{{.Label}}</dt><dd>{{if .Class}}<span class="pill {{.Class}}">{{.Value}}</span>{{else}}{{.Value}}{{end}}</dd>{{end}}</dl>
{{- end}}
{{- if .Nodes}}
<div class="small"><b>nodes</b>{{range .Nodes}}<div class="mono">{{.}}</div>{{end}}</div>
{{- end}}
{{- if .Pods}}
<div class="small"><b>pods, oldest first</b>{{range .Pods}}<div class="mono">{{.}}</div>{{end}}</div>
{{- end}}
{{- if .Pending}}
<div class="small"><b>pending LoadBalancer Services, oldest first</b>{{range .Pending}}<div class="mono">{{.}}</div>{{end}}</div>
{{- end}}
{{- if .Events}}
<div class="scroll"><table class="cluster-events">
<thead><tr><th>last seen</th><th>reason</th><th>object</th><th>message</th></tr></thead>
<tbody>{{range .Events}}<tr><td title="{{.At}}">{{.AtRel}}</td><td>{{.Reason}} <span class="small muted">{{.Count}}</span></td><td class="mono">{{.Object}}</td><td class="small">{{.Message}}</td></tr>{{end}}</tbody>
</table></div>
{{- end}}
</div>
{{- end}}
</div>
<p class="small muted">Read by {{.ServedBy}} itself, read-only, from each site's Kubernetes API (remediations.kubernetes) and its Neutron router; every watcher reads on its own. None of this moves traffic or triggers a repair.</p>
</section>
{{- end}}
<section aria-label="repairs" id="repairs">
<h2>Repairs (newest first)</h2>
{{- if .Repairs}}
<div class="scroll"><table>
<thead><tr><th>when</th>{{if $.RepairGroups}}<th>group</th>{{end}}<th>repair</th><th>action</th><th>result</th><th>why</th></tr></thead>
<tbody>
{{- range .Repairs}}
<tr class="repair"><td{{if .At}} title="{{.At}}"{{end}}>{{.AtRel}}</td>{{if $.RepairGroups}}<td>{{.Group}}</td>{{end}}<td>{{.Name}}</td><td class="mono">{{.Action}}</td><td><span class="pill {{.Class}}">{{.Result}}</span></td><td>{{.Reason}}{{if .Detail}}<div class="small muted">{{.Detail}}</div>{{end}}</td></tr>
{{- end}}
</tbody></table></div>
<p class="small muted">The leader's repairs, from the replicated records. A dry run shows what a repair would do; it is never in the history below.</p>
{{- else}}
<p class="muted">No repair has planned anything yet. Repairs run on the leader; each is off, dry-run or on.</p>
{{- end}}
</section>
<section aria-label="history" id="history">
<h2>History (newest first)</h2>
{{- range .History}}
{{- if .Minor}}
<div class="inc minorline" id="{{.ID}}">{{.AtRel}} · {{.Title}}{{if .Actor}} by {{.Actor}}{{end}}{{if .Reason}}: {{.Reason}}{{end}}{{if .Outcome}} · {{.Outcome}}{{end}}</div>
{{- else}}
<details class="inc" id="{{.ID}}"{{if .Open}} open{{end}}>
<summary><span class="pill {{.Class}}">{{.Title}}</span>{{if .Forced}} <span class="pill down">{{.Forced}}</span>{{end}} <span class="small muted">{{.AtRel}} · {{.At}}{{if .Actor}} · by {{.Actor}}{{end}}</span></summary>
<div class="body">
{{- if .Reason}}<div>{{.Reason}}</div>{{end}}
{{- if .Rule}}<div class="small">rule: <b>{{.Rule}}</b></div>{{end}}
{{- if .Outcome}}<div class="small">DNS outcome: <b>{{.Outcome}}</b></div>{{end}}
{{- range .Tallies}}<div class="small">{{.}}</div>{{end}}
{{- if .Timings}}<div class="timeline">{{range .Timings}}<span>{{.Label}} {{.At}}{{if .Delta}} <b>{{.Delta}}</b>{{end}}</span>{{end}}</div>{{end}}
{{- if .Evidence}}
<div class="scroll"><table>
<thead><tr><th>watcher</th><th>primary</th><th>backup</th><th>evidence</th></tr></thead>
<tbody>{{range .Evidence}}<tr><td>{{.Node}}</td><td>{{.Primary}}</td><td>{{.Backup}}</td><td>{{if .Abstain}}<div>abstained: {{.Abstain}}</div>{{end}}{{range .Failing}}<div>{{.}}</div>{{end}}{{if .LastReport}}<div class="small muted">last report {{.LastReport}}</div>{{end}}</td></tr>{{end}}</tbody>
</table></div>
{{- end}}
</div>
</details>
{{- end}}
{{- else}}
<p class="muted">No history yet.</p>
{{- end}}
</section>
<section aria-label="raft" id="raft">
<h2>Raft</h2>
<dl class="kv">
<dt>leader</dt><dd>{{if .Raft.Leader}}{{.Raft.Leader}}{{if .Raft.LeaderAddr}} <span class="mono muted">{{.Raft.LeaderAddr}}</span>{{end}}{{else}}<b class="down">none known</b>{{end}}</dd>
<dt>this node</dt><dd>{{.ServedBy}}: {{.Raft.State}}, last contact with the leader: {{.Raft.LastContact}}</dd>
<dt>term</dt><dd>{{.Raft.Term}}</dd>
<dt>log</dt><dd>commit {{.Raft.Commit}} · applied {{.Raft.Applied}} · last snapshot {{.Raft.Snapshot}}</dd>
<dt>members</dt><dd>{{range .Raft.Members}}<div>{{.ID}} <span class="mono muted">{{.Addr}}</span> {{.Suffrage}} <span class="muted">{{.Runs}}</span>{{if .Leader}} <span class="pill ok">leader</span>{{end}}{{if .Self}} <span class="pill manual">serving this page</span>{{end}}</div>{{else}}<span class="muted">unknown</span>{{end}}</dd>
</dl>
</section>
<p class="small muted" id="served-by">Served by {{.ServedBy}} at {{.ServedAt}}, from its own replica of the replicated state{{if .DataAge}} (last applied {{.DataAge}} ago){{end}}.</p>
{{end}}`))
