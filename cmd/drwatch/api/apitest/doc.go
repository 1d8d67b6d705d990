// Package apitest holds test helpers for drwatch's HTTP API and status
// page that other test suites (the end-to-end suite in test/) reuse:
// AssertNoSecrets greps a reply for secret values in every encoding a page
// or JSON document could carry them, and Browse loads a page in headless
// Chromium and returns the DOM after its scripts ran, with a screenshot.
//
// It deliberately does not import package api, so that api's own
// in-package tests can use it without an import cycle. Only tests import
// it, never the code of a package outside test/.
package apitest
