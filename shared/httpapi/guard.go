package httpapi

import (
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Browser-origin safety (issue 10, in every auth mode). A web page open in the same browser can send
// requests to docmind (a "simple" cross-origin POST needs no preflight) and, through DNS rebinding, read
// the answers; so:
//   - a request under /api/ or /v1/ whose Origin names another origin than the server's own (or one of
//     AllowedOrigins) is refused with 403, as is one a browser marks Sec-Fetch-Site: cross-site;
//   - a JSON endpoint requires Content-Type: application/json and an upload multipart/form-data (415
//     otherwise), so an HTML form cannot forge either;
//   - an allow-listed origin gets CORS headers (its preflight is answered before authentication), so a page
//     there can read the answers; no other origin ever does;
//   - with LoopbackOnly (auth mode none) the Host header must be a loopback name or address with the bound
//     port (a rebinding attacker's name is refused before any handler runs).

// GuardOptions configure the browser-origin checks.
type GuardOptions struct {
	// AllowedOrigins are other origins allowed to call the API ("https://chat.example.com"; exact match,
	// scheme and host[:port]). The server's own origin is always allowed.
	AllowedOrigins []string
	// LoopbackOnly requires a loopback Host header with Port.
	LoopbackOnly bool
	// Port returns the bound port (the listener's, so ":0" works), for LoopbackOnly.
	Port func() string
}

func (h *handler) guard(next http.Handler) http.Handler {
	allowed := make([]string, 0, len(h.d.Guard.AllowedOrigins))
	for _, o := range h.d.Guard.AllowedOrigins {
		allowed = append(allowed, strings.TrimRight(strings.ToLower(strings.TrimSpace(o)), "/"))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.d.Guard.LoopbackOnly && !loopbackHost(r.Host, h.d.Guard.Port) {
			h.refuse(w, http.StatusForbidden, "Forbidden", "this server answers only to a loopback host name (127.0.0.1, localhost or [::1]) with its port")
			return
		}
		if apiPath(r.URL.Path) {
			if !sameOriginOrAllowed(r, allowed) {
				// the usual cause for the page itself is a reverse proxy that rewrote Host (nginx's default
				// proxy_pass sends the upstream's name): the log line shows both sides
				h.d.Logger.Info("cross-origin request refused", "origin", r.Header.Get("Origin"), "host", r.Host, "path", r.URL.Path)
				h.refuse(w, http.StatusForbidden, "Forbidden", "cross-origin requests are not allowed; set DOCMIND_ALLOWED_ORIGINS to allow an origin "+
					"(behind a reverse proxy, pass the browser's Host header through, e.g. nginx: proxy_set_header Host $host)")
				return
			}
			if preflight := allowCORS(w, r, allowed); preflight {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			if msg := contentTypeProblem(r); msg != "" {
				h.refuse(w, http.StatusUnsupportedMediaType, "UnsupportedMediaType", msg)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (h *handler) refuse(w http.ResponseWriter, code int, errCode, msg string) {
	WriteJSON(w, code, map[string]map[string]string{"error": {"code": errCode, "message": msg}})
}

// apiPath names what needs an identity and the origin checks: the API, the OpenAI-compatible routes,
// the MCP endpoint and the external knowledge API.
func apiPath(p string) bool {
	return strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/v1/") || p == "/mcp" || p == "/retrieval"
}

// sameOriginOrAllowed accepts a request without an Origin (not a browser, or a same-origin GET) unless the
// browser says it is cross-site, and one whose Origin's host equals the Host header or is allow-listed.
func sameOriginOrAllowed(r *http.Request, allowed []string) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return r.Header.Get("Sec-Fetch-Site") != "cross-site"
	}
	o := strings.TrimRight(strings.ToLower(origin), "/")
	if slices.Contains(allowed, o) {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return false // includes the opaque "null" origin of sandboxed frames and file:// pages
	}
	return strings.EqualFold(u.Host, r.Host)
}

// allowCORS lets a browser page on an allow-listed origin read the API's answers (a single-page app on
// another domain): its Origin is echoed in Access-Control-Allow-Origin, never "*" and never an origin
// outside the list, and a preflight (OPTIONS with Access-Control-Request-Method) is answered here, before
// authentication, since a browser sends it without the Authorization header. No credentials mode: the
// API key or token travels in a header the page sets, not in a cookie. It reports whether r was a
// preflight, answered by the caller with 204.
func allowCORS(w http.ResponseWriter, r *http.Request, allowed []string) bool {
	origin := strings.TrimRight(strings.ToLower(r.Header.Get("Origin")), "/")
	if origin == "" || !slices.Contains(allowed, origin) {
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", r.Header.Get("Origin"))
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Expose-Headers", "Retry-After, WWW-Authenticate, X-Docmind-Conversation")
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, PATCH, DELETE")
	// X-Docmind-Authorization carries the key or token where Authorization is taken (the chat function
	// behind CloudFront OAC, whose SigV4 signature occupies Authorization)
	h.Set("Access-Control-Allow-Headers", "Authorization, Content-Type, X-Docmind-Authorization")
	h.Set("Access-Control-Max-Age", "600")
	return true
}

// contentTypeProblem says what is wrong with a body's declared type, "" when nothing is. Requests
// without a body (GET, DELETE, a bare POST such as reprocess) need none.
func contentTypeProblem(r *http.Request) string {
	if r.Method == http.MethodGet || r.Method == http.MethodHead || r.Method == http.MethodOptions {
		return ""
	}
	if r.ContentLength == 0 && r.Header.Get("Content-Type") == "" {
		return ""
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	want := "application/json"
	if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/api/kbs/") && strings.HasSuffix(r.URL.Path, "/documents") {
		want = "multipart/form-data"
	}
	if err == nil && r.Method == http.MethodPatch && mt == "application/merge-patch+json" {
		return "" // a JSON merge patch (PATCH /api/documents/{id}/metadata) is JSON too
	}
	if err != nil || mt != want {
		return "Content-Type must be " + want
	}
	return ""
}

// loopbackHost accepts "localhost", "*.localhost", 127.0.0.0/8 and ::1 with the bound port.
func loopbackHost(hostport string, port func() string) bool {
	host, p, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	if port != nil && p != port() {
		return false
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
