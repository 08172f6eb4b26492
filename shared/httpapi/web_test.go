package httpapi

import (
	"bytes"
	"encoding/binary"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// GET /favicon.ico answers the icon itself (it was a 404), with the page's headers, so browsers stop
// logging a failed request on every visit.
func TestFaviconIsServed(t *testing.T) {
	mux := http.NewServeMux()
	serveWeb(mux, "")
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/favicon.ico", nil))
	body, _ := io.ReadAll(rec.Body)
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "image/x-icon" || !bytes.Equal(body, favicon()) {
		t.Fatalf("GET /favicon.ico = %d %q, %d bytes", rec.Code, rec.Header().Get("Content-Type"), len(body))
	}
	if rec.Header().Get("X-Content-Type-Options") != "nosniff" || rec.Header().Get("Content-Security-Policy") != webCSP {
		t.Fatalf("headers: %v", rec.Header())
	}
}

func TestFaviconIsAnICOHoldingA32PixelPNG(t *testing.T) {
	ico := favicon()
	var head struct{ Reserved, Type, Count uint16 }
	if err := binary.Read(bytes.NewReader(ico), binary.LittleEndian, &head); err != nil || head != (struct{ Reserved, Type, Count uint16 }{0, 1, 1}) {
		t.Fatalf("ICONDIR = %+v, %v; want 0, 1 (icon), 1 image", head, err)
	}
	size := binary.LittleEndian.Uint32(ico[6+8:])
	offset := binary.LittleEndian.Uint32(ico[6+12:])
	if int(offset)+int(size) != len(ico) || ico[6] != 32 || ico[7] != 32 {
		t.Fatalf("entry: %dx%d, %d bytes at %d; file is %d bytes", ico[6], ico[7], size, offset, len(ico))
	}
	img, err := png.Decode(bytes.NewReader(ico[offset:]))
	if err != nil || img.Bounds().Dx() != 32 || img.Bounds().Dy() != 32 {
		t.Fatalf("embedded PNG: %v, %v", img, err)
	}
	// transparent corners, and both colours inside
	if _, _, _, a := img.At(0, 0).RGBA(); a != 0 {
		t.Error("corner is not transparent")
	}
	if r, _, _, _ := img.At(21, 10).RGBA(); r>>8 != 0xff {
		t.Error("the stem of the d is not white")
	}
}

// The page builds its DOM from text only: no HTML parsing sink may appear in its script, and nothing may
// be loaded from another origin by any served file.
func TestWebFilesUseNoHTMLSinksAndNoOtherOrigin(t *testing.T) {
	sink := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function|setAttribute\("on|\.srcdoc|createContextualFragment|DOMParser`)
	remote := regexp.MustCompile(`(src|href)=["']?(https?:)?//`)
	seen := map[string]bool{}
	for _, f := range webFiles() {
		seen[f.pattern] = true
		if f.contentType == "image/x-icon" {
			continue
		}
		if m := sink.Find(f.body); m != nil {
			t.Errorf("%s uses %s", f.pattern, m)
		}
		if m := remote.Find(f.body); m != nil {
			t.Errorf("%s loads from another origin: %s", f.pattern, m)
		}
		if strings.Contains(f.contentType, "html") && (bytes.Contains(f.body, []byte("<script>")) || bytes.Contains(f.body, []byte(" style="))) {
			t.Errorf("%s has inline script or style, which the CSP refuses", f.pattern)
		}
	}
	for _, p := range []string{"GET /{$}", "GET /app.js", "GET /chat.js", "GET /markdown.js", "GET /app.css", "GET /favicon.ico"} {
		if !seen[p] {
			t.Errorf("%s is not served", p)
		}
	}
}

// The page's script is ES modules: every module another imports (by a relative path) is served, as
// JavaScript (a module served with another type does not run) and under the same CSP and caching as the
// page, and no module is served that nothing imports (a file left behind by a split).
func TestWebModulesAreServedAndLinked(t *testing.T) {
	mux := http.NewServeMux()
	serveWeb(mux, "")
	get := func(p string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", p, nil))
		return rec
	}
	importRe := regexp.MustCompile(`(?m)^import (?:[^"]*? from )?"([^"]+)";`)
	want := map[string]bool{"/app.js": true} // index.html loads app.js
	seen := map[string]bool{}
	queue := []string{"/app.js"}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if seen[p] {
			continue
		}
		seen[p] = true
		rec := get(p)
		if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "text/javascript; charset=utf-8" {
			t.Fatalf("GET %s = %d %q", p, rec.Code, rec.Header().Get("Content-Type"))
		}
		if rec.Header().Get("Content-Security-Policy") != webCSP || rec.Header().Get("Cache-Control") != "no-cache" ||
			rec.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Fatalf("GET %s headers: %v", p, rec.Header())
		}
		for _, m := range importRe.FindAllStringSubmatch(rec.Body.String(), -1) {
			if !strings.HasPrefix(m[1], "./") || !strings.HasSuffix(m[1], ".js") {
				t.Fatalf("%s imports %q: only sibling modules (./name.js) are served", p, m[1])
			}
			dep := "/" + strings.TrimPrefix(m[1], "./")
			want[dep] = true
			queue = append(queue, dep)
		}
	}
	if len(seen) < 8 {
		t.Fatalf("app.js reaches %d modules; the page is split by concern into more", len(seen))
	}
	for _, f := range webFiles() {
		p := strings.TrimPrefix(f.pattern, "GET ")
		if strings.HasSuffix(p, ".js") && !want[p] {
			t.Errorf("%s is served but no module imports it", p)
		}
	}
	if rec := get("/app_test.mjs"); rec.Code == http.StatusOK {
		t.Error("the node test file is served")
	}
}

// Presigned uploads go to the storage's origin, which the page's policy must let it connect to; only a
// bare http(s) origin is added, to connect-src alone, and anything else leaves the strict policy.
func TestWebCSPAddsOnlyTheUploadOrigin(t *testing.T) {
	want := strings.Replace(webCSP, "connect-src 'self';", "connect-src 'self' https://docmind-uploads.s3.eu-west-1.amazonaws.com;", 1)
	for _, o := range []string{"https://docmind-uploads.s3.eu-west-1.amazonaws.com", "https://docmind-uploads.s3.eu-west-1.amazonaws.com/"} {
		if got := webCSPFor(o); got != want {
			t.Errorf("%q: %s", o, got)
		}
	}
	for _, bad := range []string{"", "ftp://x.example", "https://x.example/path", "https://*.amazonaws.com", "https://x.example; script-src *",
		"https://x.example 'unsafe-inline'", "//x.example", "https://user@x.example", "https://x.example/?q=1", "javascript:alert(1)"} {
		if got := webCSPFor(bad); got != webCSP {
			t.Errorf("%q changed the policy: %s", bad, got)
		}
	}
	// served: the page and its modules carry it, and script-src stays 'self'
	mux := http.NewServeMux()
	serveWeb(mux, "http://127.0.0.1:9000")
	for _, p := range []string{"/", "/app.js", "/uploads.js"} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", p, nil))
		csp := rec.Header().Get("Content-Security-Policy")
		if !strings.Contains(csp, "connect-src 'self' http://127.0.0.1:9000;") || !strings.Contains(csp, "script-src 'self';") {
			t.Errorf("%s: %s", p, csp)
		}
	}
}
