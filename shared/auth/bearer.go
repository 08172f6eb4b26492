package auth

import "strings"

// BearerToken returns the credential of an "Authorization: Bearer <credential>" header value. The scheme is
// matched case-insensitively (RFC 9110 §11.1); ok is false for another scheme, an empty credential, or one
// with spaces or control characters (never a key or a JWT, so never worth a lookup).
func BearerToken(header string) (credential string, ok bool) {
	scheme, cred, found := strings.Cut(strings.TrimSpace(header), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	cred = strings.TrimLeft(cred, " ")
	if cred == "" || len(cred) > maxTokenLen {
		return "", false
	}
	for i := 0; i < len(cred); i++ {
		if c := cred[i]; c <= ' ' || c >= 0x7f {
			return "", false
		}
	}
	return cred, true
}
