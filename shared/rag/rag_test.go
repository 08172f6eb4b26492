package rag

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestKindOf(t *testing.T) {
	base := E("sqlite.GetKB", KindNotFound, nil)
	cases := []struct {
		err  error
		want Kind
	}{
		{nil, KindUnknown},
		{errors.New("plain"), KindUnknown},
		{base, KindNotFound},
		{fmt.Errorf("load kb: %w", base), KindNotFound},
		{E("outer", KindUnknown, base), KindNotFound},        // an unclassified wrapper keeps the inner kind
		{E("outer", KindUnavailable, base), KindUnavailable}, // the outermost classification wins
		{context.DeadlineExceeded, KindUnavailable},
		{fmt.Errorf("x: %w", context.Canceled), KindUnavailable},
	}
	for i, c := range cases {
		if got := KindOf(c.err); got != c.want {
			t.Errorf("case %d: KindOf(%v) = %v, want %v", i, c.err, got, c.want)
		}
	}
	if got := base.Error(); got != "sqlite.GetKB: NotFound" {
		t.Errorf("Error() = %q", got)
	}
}

func TestValidateID(t *testing.T) {
	for _, ok := range []string{"a", "kb_0123", "A-b_C", "v" + string(make([]byte, 0))} {
		if err := ValidateID("id", ok); err != nil {
			t.Errorf("%q rejected: %v", ok, err)
		}
	}
	long := make([]byte, 65)
	for i := range long {
		long[i] = 'a'
	}
	for _, bad := range []string{"", string(long), "a b", `a"`, "a'", "é", "a/b", "a\x00"} {
		if ValidateID("id", bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	for _, bad := range []string{`"`, "a\u201cb", "\uff02", "x\\", "\x01"} {
		if ValidateTag(bad) == nil {
			t.Errorf("tag %q accepted", bad)
		}
	}
	if ValidateTag("保险 条款") != nil {
		t.Error("CJK tag with a space rejected")
	}
}

func TestVectorIDDeterministic(t *testing.T) {
	a := VectorID("kb", "doc", "hash", 0)
	if a != VectorID("kb", "doc", "hash", 0) {
		t.Fatal("not deterministic")
	}
	seen := map[string]bool{a: true}
	for _, other := range []string{VectorID("kb", "doc", "hash", 1), VectorID("kbd", "oc", "hash", 0), VectorID("kb", "doc", "hash2", 0)} {
		if seen[other] {
			t.Fatalf("collision: %s", other)
		}
		seen[other] = true
	}
	if err := ValidateID("vector id", a); err != nil || len(a) > MaxIDLen {
		t.Fatalf("vector id %q invalid: %v", a, err)
	}
	if NewID("kb") == NewID("kb") {
		t.Fatal("NewID repeated")
	}
}
