package apitest

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestBrowseWithoutChromiumNamesThePackage(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := BrowseContext(t.Context(), "http://127.0.0.1:1/", BrowseOptions{})
	if !errors.Is(err, ErrNoChromium) || !strings.Contains(err.Error(), "Debian package chromium") {
		t.Fatalf("got %v, want ErrNoChromium naming the Debian package", err)
	}
}

// TestBrowseRunsScripts loads a page whose script rewrites the DOM and
// whose fetch fails: the dump is taken after both ran. (The fetch goes to
// a .invalid name, which never resolves, so the test itself cannot leave
// the machine even if --host-resolver-rules were ignored.)
func TestBrowseRunsScripts(t *testing.T) {
	if _, err := Chromium(); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(`<!doctype html><p id="a">static</p><p id="b">pending</p><script>
document.getElementById("a").textContent="scripted";
fetch("http://example.invalid/x").then(function(){document.getElementById("b").textContent="REACHED OUTSIDE";})
  .catch(function(){document.getElementById("b").textContent="outside blocked";});
</script>`))
	}))
	t.Cleanup(srv.Close)
	dom := Browse(t, srv.URL, BrowseOptions{})
	for _, want := range []string{`<p id="a">scripted</p>`, `<p id="b">outside blocked</p>`} {
		if !strings.Contains(dom, want) {
			t.Errorf("DOM: missing %s in %s", want, dom)
		}
	}
}
