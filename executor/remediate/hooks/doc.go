// Package hooks runs the operator's pre- and post-failover hooks: a command
// (with the decision in DRWATCH_* environment variables) or a webhook (the
// decision as JSON, signed with HMAC-SHA256 over a timestamp, a nonce and
// the body, so it cannot be replayed; receivers check it with Verify), each
// with a timeout.
//
// A failing pre-failover hook blocks an automatic flip and says so; a manual
// or forced flip goes ahead and records the failure. A hook that times out
// is not a failure unless its on_timeout says block: by default the flip
// goes ahead and the record says the hook timed out, so a hung hook never
// holds a flip for ever. Post-failover hooks run once the flip is verified;
// their failures are recorded, never undone.
//
// A failover group's own hooks are told its name (DRWATCH_GROUP, or the
// body's group field); the top-level hooks, which act on the default
// group, receive exactly what they did before groups.
//
// Like every remediation package it never imports cluster.
package hooks
