package auth

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestBearerToken(t *testing.T) {
	tests := []struct {
		in, want string
		ok       bool
	}{
		{"Bearer dm_abc", "dm_abc", true},
		{"bearer eyJ.eyJ.sig", "eyJ.eyJ.sig", true},
		{"BEARER   dm_abc  ", "dm_abc", true},
		{"", "", false},
		{"Bearer", "", false},
		{"Bearer ", "", false},
		{"Basic dXNlcjpwYXNz", "", false},
		{"Bearer a b", "", false},
		{"Bearer a\tb", "", false},
		{"Bearer caf\xc3\xa9", "", false},
		{"Bearer " + strings.Repeat("a", maxTokenLen+1), "", false},
	}
	for _, tt := range tests {
		got, ok := BearerToken(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("BearerToken(%.30q) = %q, %v; want %q, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// FuzzVerify: no input panics the verifier or is accepted by it (the fuzzer cannot sign).
func FuzzVerify(f *testing.F) {
	for _, s := range []string{"", "a.b.c", "eyJhbGciOiJub25lIn0.e30.", "eyJhbGciOiJIUzI1NiJ9.e30.AAAA", "..", "dm_x"} {
		f.Add(s)
	}
	v, err := NewJWTVerifier(JWTConfig{HS256Secret: []byte(strings.Repeat("k", 32)), Issuer: "i", Audience: []string{"a"},
		Now: func() time.Time { return t0 }})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, token string) {
		if c, err := v.Verify(context.Background(), token); err == nil {
			t.Fatalf("accepted %q: %+v", token, c)
		}
		_, _ = BearerToken(token)
		_ = LooksLikeAPIKey(token)
	})
}
