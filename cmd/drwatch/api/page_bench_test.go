package api

import (
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkStatusPage measures rendering the page, its partial and the
// summary against encoding the same Status as /api/v1/status does (the
// baseline, measured in the same loop), so the result is a ratio that
// does not depend on the machine: page/json = 3 means the page costs three
// JSON answers.
func BenchmarkStatusPage(b *testing.B) {
	st := fxFailedOver()
	var jsonT, pageT, partT, sumT time.Duration
	var jsonN, pageN, partN int
	var buf bytes.Buffer
	for b.Loop() {
		t0 := time.Now()
		buf.Reset()
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		if err := enc.Encode(st); err != nil {
			b.Fatal(err)
		}
		jsonN = buf.Len()
		t1 := time.Now()
		buf.Reset()
		if err := pageTemplate.ExecuteTemplate(&buf, "page", buildPage(st, fxNow, newNonce())); err != nil {
			b.Fatal(err)
		}
		pageN = buf.Len()
		t2 := time.Now()
		buf.Reset()
		if err := pageTemplate.ExecuteTemplate(&buf, "main", buildPage(st, fxNow, newNonce())); err != nil {
			b.Fatal(err)
		}
		partN = buf.Len()
		t3 := time.Now()
		buf.Reset()
		if err := json.NewEncoder(&buf).Encode(BuildSummary(st)); err != nil {
			b.Fatal(err)
		}
		t4 := time.Now()
		jsonT, pageT, partT, sumT = jsonT+t1.Sub(t0), pageT+t2.Sub(t1), partT+t3.Sub(t2), sumT+t4.Sub(t3)
	}
	b.ReportMetric(float64(pageT)/float64(jsonT), "page/json")
	b.ReportMetric(float64(partT)/float64(jsonT), "partial/json")
	b.ReportMetric(float64(sumT)/float64(jsonT), "summary/json")
	b.ReportMetric(float64(pageN)/float64(jsonN), "page-bytes/json-bytes")
	b.ReportMetric(float64(partN)/float64(jsonN), "partial-bytes/json-bytes")
}

// BenchmarkStatusPageFiftyGroups measures serving "/" of a cluster of 50
// failover groups (overview and the default group's detail, the pending
// groups' countdowns looked up) against serving "/" of a cluster of one
// group with the same probes per group, in the same loop: the ratio is
// what the overview costs.
func BenchmarkStatusPageFiftyGroups(b *testing.B) {
	serve := func(n int) func() int {
		st, m := fxGroups(b, n)
		s := NewServer(&pageBackend{st: st, m: m}, Options{Now: func() time.Time { return fxNow }})
		RegisterStatusPage(s, &pageBackend{st: st, m: m})
		return func() int {
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
			if rec.Code != 200 {
				b.Fatalf("GET /: %d", rec.Code)
			}
			return rec.Body.Len()
		}
	}
	one, fifty := serve(1), serve(50)
	var oneT, fiftyT time.Duration
	var oneN, fiftyN int
	for b.Loop() {
		t0 := time.Now()
		oneN = one()
		t1 := time.Now()
		fiftyN = fifty()
		t2 := time.Now()
		oneT, fiftyT = oneT+t1.Sub(t0), fiftyT+t2.Sub(t1)
	}
	b.ReportMetric(float64(fiftyT)/float64(oneT), "50groups/1group")
	b.ReportMetric(float64(fiftyN)/float64(oneN), "50groups-bytes/1group-bytes")
}
