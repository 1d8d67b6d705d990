// Package remediatetest holds what every remediator's tests share: a
// one-process replicated log in front of a real failover.Machine, and a
// helper that runs one Runner pass and returns the records it added.
//
// Only tests import it, never the code of a package outside test/. Like
// every remediation package it never imports cluster.
package remediatetest
