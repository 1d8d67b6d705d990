// Package drill holds the readiness checks of a failover drill: the parts
// of "would a failover work now?" that a canary write cannot prove.
//
//   - Certificates: for every public name, a TLS handshake with the backup's
//     address, the name as SNI, verified as the probes verify (the tcp
//     prober itself runs it), and at least cert_min_validity left. In seed
//     000 the backup could not get its certificates while DNS pointed at
//     the dead primary: the ACME chicken-and-egg, found on the day.
//   - TTL against the RTO budget: detection, decision and write,
//     propagation and the records' TTL, summed and compared.
//   - The remediations plan for a failover to the backup, in dry-run
//     (remediate.PlanAll), listed.
//   - The RTO estimate, from a drill's measured steps and the policy's
//     detection floor (RTO.String).
//
// Each check returns a Check (name, pass, reason with the numbers);
// Readiness runs them all. Inputs are plain values where possible, so each
// check is tested alone; only the certificate check does I/O, and the
// remediation plan reads through the remediators' Plan (never Apply).
//
// The package may import the decision core, the probes (for their TLS
// verification) and the remediation interfaces; never the Raft plumbing,
// the watcher's runtime or the shell (test/importrules). It writes
// nothing: the canary write is the drill executor's.
package drill
