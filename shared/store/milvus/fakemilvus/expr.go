package fakemilvus

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// predicate is a parsed boolean expression over a row's fields.
type predicate interface {
	eval(fields map[string]any) (bool, error)
}

// operand is a field, or a path into a JSON field (meta["s"]["year"]).
type operand struct {
	field string
	path  []string
}

// resolve returns the operand's value in a row: a varchar field's string, an array field's []string,
// or the JSON value at the path (float64, string, []any, map[string]any); present is false for a JSON
// null or a path that is not there. A field the row does not have is an error, as in Milvus.
func (o operand) resolve(f map[string]any) (v any, present bool, err error) {
	v, ok := f[o.field]
	if !ok {
		return nil, false, fmt.Errorf("field %s does not exist", o.field)
	}
	for _, k := range o.path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false, nil
		}
		if v, ok = m[k]; !ok {
			return nil, false, nil
		}
	}
	return v, v != nil, nil
}

type andExpr struct{ l, r predicate }
type orExpr struct{ l, r predicate }
type notExpr struct{ p predicate }
type cmpExpr struct {
	lhs   operand
	op    string // ==, !=, <, <=, >, >=
	value any    // string or float64
}
type inExpr struct {
	lhs    operand
	values []any
	// strs holds values when they are all strings: a set, as Milvus evaluates a term list, so that a
	// long id list costs the fake what it costs a server and not a scan per row
	strs map[string]bool
}
type existsExpr struct{ lhs operand }
type nullExpr struct {
	field string
	not   bool // is not null
}

// containsExpr is array_contains, array_contains_any (an array field), json_contains and
// json_contains_any (a JSON array at a path).
type containsExpr struct {
	lhs    operand
	values []any
}

func (e andExpr) eval(f map[string]any) (bool, error) {
	l, err := e.l.eval(f)
	if err != nil || !l {
		return false, err
	}
	return e.r.eval(f)
}

func (e orExpr) eval(f map[string]any) (bool, error) {
	l, err := e.l.eval(f)
	if err != nil || l {
		return l, err
	}
	return e.r.eval(f)
}

func (e notExpr) eval(f map[string]any) (bool, error) {
	v, err := e.p.eval(f)
	return !v, err
}

// compare orders a and b when they are of one kind (strings, or numbers); ok is false otherwise.
func compare(a, b any) (c int, ok bool) {
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return strings.Compare(x, y), ok
	case float64:
		y, ok := b.(float64)
		switch {
		case !ok:
			return 0, false
		case x < y:
			return -1, true
		case x > y:
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// eval compares the operand with the literal; a missing JSON path or a value of another kind is false
// (Milvus compares JSON values of the literal's type only).
func (e cmpExpr) eval(f map[string]any) (bool, error) {
	v, present, err := e.lhs.resolve(f)
	if err != nil || !present {
		return false, err
	}
	c, ok := compare(v, e.value)
	if !ok {
		if len(e.lhs.path) == 0 {
			return false, fmt.Errorf("field %s cannot be compared with %v", e.lhs.field, e.value)
		}
		return false, nil
	}
	switch e.op {
	case "==":
		return c == 0, nil
	case "!=":
		return c != 0, nil
	case ">":
		return c > 0, nil
	case ">=":
		return c >= 0, nil
	case "<":
		return c < 0, nil
	}
	return c <= 0, nil
}

func (e inExpr) eval(f map[string]any) (bool, error) {
	v, present, err := e.lhs.resolve(f)
	if err != nil || !present {
		return false, err
	}
	if s, isStr := v.(string); isStr && e.strs != nil {
		return e.strs[s], nil
	}
	for _, w := range e.values {
		if c, ok := compare(v, w); ok && c == 0 {
			return true, nil
		}
	}
	if _, isStr := v.(string); !isStr && len(e.lhs.path) == 0 {
		return false, fmt.Errorf("field %s is not a string", e.lhs.field)
	}
	return false, nil
}

func (e existsExpr) eval(f map[string]any) (bool, error) {
	_, present, err := e.lhs.resolve(f)
	return present, err
}

func (e nullExpr) eval(f map[string]any) (bool, error) {
	v, ok := f[e.field]
	if !ok {
		return false, fmt.Errorf("field %s does not exist", e.field)
	}
	return (v == nil) != e.not, nil
}

func (e containsExpr) eval(f map[string]any) (bool, error) {
	v, present, err := e.lhs.resolve(f)
	if err != nil || !present {
		return false, err
	}
	var elems []any
	switch x := v.(type) {
	case []string:
		for _, s := range x {
			elems = append(elems, s)
		}
	case []any:
		elems = x
	default:
		if len(e.lhs.path) == 0 {
			return false, fmt.Errorf("field %s is not an array", e.lhs.field)
		}
		return false, nil
	}
	for _, w := range e.values {
		for _, el := range elems {
			if c, ok := compare(el, w); ok && c == 0 {
				return true, nil
			}
		}
	}
	return false, nil
}

type parser struct {
	toks []string
	pos  int
}

// parseExpr parses the subset of Milvus's expression language docmind emits: comparisons (==, !=, <,
// <=, >, >=) and in-lists of string and number literals over fields and JSON paths (meta["s"]["k"]),
// exists, is null, is not null, not, and, or, parentheses, array_contains(_any) and
// json_contains(_any). String literals take Milvus's (C's) escapes, read with strconv.Unquote as
// Milvus's parser does.
func parseExpr(s string) (predicate, error) {
	toks, err := tokenize(s)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	e, err := p.or()
	if err != nil {
		return nil, err
	}
	if p.pos != len(p.toks) {
		return nil, fmt.Errorf("unexpected %q", p.toks[p.pos])
	}
	return e, nil
}

func (p *parser) peek() string {
	if p.pos < len(p.toks) {
		return p.toks[p.pos]
	}
	return ""
}

func (p *parser) next() string { t := p.peek(); p.pos++; return t }

func (p *parser) expect(t string) error {
	if got := p.next(); !strings.EqualFold(got, t) {
		return fmt.Errorf("want %q, got %q", t, got)
	}
	return nil
}

func (p *parser) or() (predicate, error) {
	l, err := p.and()
	for err == nil && (strings.EqualFold(p.peek(), "or") || p.peek() == "||") {
		p.next()
		var r predicate
		r, err = p.and()
		l = orExpr{l, r}
	}
	return l, err
}

func (p *parser) and() (predicate, error) {
	l, err := p.unary()
	for err == nil && (strings.EqualFold(p.peek(), "and") || p.peek() == "&&") {
		p.next()
		var r predicate
		r, err = p.unary()
		l = andExpr{l, r}
	}
	return l, err
}

func (p *parser) unary() (predicate, error) {
	if strings.EqualFold(p.peek(), "not") {
		p.next()
		e, err := p.unary()
		return notExpr{e}, err
	}
	return p.atom()
}

var keywords = []string{"and", "or", "not", "in", "exists", "is", "null", "like"}

func isIdent(t string) bool {
	if t == "" || slices.Contains(keywords, strings.ToLower(t)) {
		return false
	}
	for i, r := range t {
		if !(r == '_' || unicode.IsLetter(r) || (i > 0 && unicode.IsDigit(r))) {
			return false
		}
	}
	return true
}

// operand reads a field name and any JSON path after it.
func (p *parser) operand() (operand, error) {
	t := p.next()
	if !isIdent(t) {
		return operand{}, fmt.Errorf("bad field %q", t)
	}
	o := operand{field: t}
	for p.peek() == "[" {
		p.next()
		k, err := p.str()
		if err != nil {
			return o, err
		}
		o.path = append(o.path, k)
		if err := p.expect("]"); err != nil {
			return o, err
		}
	}
	return o, nil
}

func (p *parser) atom() (predicate, error) {
	t := p.peek()
	switch lt := strings.ToLower(t); {
	case t == "(":
		p.next()
		e, err := p.or()
		if err != nil {
			return nil, err
		}
		return e, p.expect(")")
	case lt == "exists":
		p.next()
		o, err := p.operand()
		return existsExpr{o}, err
	case lt == "array_contains" || lt == "array_contains_any" || lt == "json_contains" || lt == "json_contains_any":
		p.next()
		if err := p.expect("("); err != nil {
			return nil, err
		}
		o, err := p.operand()
		if err != nil {
			return nil, err
		}
		if strings.HasPrefix(lt, "array") != (len(o.path) == 0) {
			return nil, fmt.Errorf("%s takes an array field or a JSON path as its kind says", t)
		}
		if err := p.expect(","); err != nil {
			return nil, err
		}
		var vals []any
		if strings.HasSuffix(lt, "_any") {
			if vals, err = p.list(); err != nil {
				return nil, err
			}
		} else {
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			vals = []any{v}
		}
		return containsExpr{lhs: o, values: vals}, p.expect(")")
	case isIdent(t):
		o, err := p.operand()
		if err != nil {
			return nil, err
		}
		op := p.next()
		switch strings.ToLower(op) {
		case "==", "!=", ">", ">=", "<", "<=": // strings compare in byte order, as Milvus compares varchar
			v, err := p.value()
			return cmpExpr{lhs: o, op: op, value: v}, err
		case "in":
			vals, err := p.list()
			e := inExpr{lhs: o, values: vals, strs: map[string]bool{}}
			for _, v := range vals {
				s, ok := v.(string)
				if !ok {
					e.strs = nil
					break
				}
				e.strs[s] = true
			}
			return e, err
		case "is":
			if len(o.path) > 0 {
				return nil, fmt.Errorf("is null takes a field")
			}
			not := false
			if strings.EqualFold(p.peek(), "not") {
				p.next()
				not = true
			}
			return nullExpr{field: o.field, not: not}, p.expect("null")
		}
		return nil, fmt.Errorf("unsupported operator %q", op)
	}
	return nil, fmt.Errorf("unexpected %q", t)
}

// str reads a string literal.
func (p *parser) str() (string, error) {
	t := p.next()
	if len(t) < 2 || t[0] != '"' || t[len(t)-1] != '"' {
		return "", fmt.Errorf("want a string literal, got %q", t)
	}
	s, err := strconv.Unquote(t)
	if err != nil {
		return "", fmt.Errorf("bad string literal %s: %v", t, err)
	}
	return s, nil
}

// value reads a string or a number literal (a number may carry a unary minus).
func (p *parser) value() (any, error) {
	t := p.peek()
	if strings.HasPrefix(t, `"`) {
		return p.str()
	}
	p.next()
	sign := 1.0
	if t == "-" {
		sign, t = -1, p.next()
	}
	n, err := strconv.ParseFloat(t, 64)
	if err != nil || t == "" || !(t[0] >= '0' && t[0] <= '9') {
		return nil, fmt.Errorf("want a string or a number, got %q", t)
	}
	return sign * n, nil
}

func (p *parser) list() ([]any, error) {
	if err := p.expect("["); err != nil {
		return nil, err
	}
	var out []any
	for p.peek() != "]" {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		if p.peek() == "," {
			p.next()
		} else if p.peek() != "]" {
			return nil, fmt.Errorf("want , or ] in a list, got %q", p.peek())
		}
	}
	p.next()
	return out, nil
}

// tokenize splits an expression; string literals keep their quotes and escapes (str reads them).
func tokenize(s string) ([]string, error) {
	var toks []string
	rs := []rune(s)
	for i := 0; i < len(rs); {
		r := rs[i]
		switch {
		case unicode.IsSpace(r):
			i++
		case r == '"':
			j := i + 1
			for j < len(rs) && rs[j] != '"' {
				if rs[j] == '\n' || rs[j] == '\r' {
					return nil, fmt.Errorf("a line break in a string literal")
				}
				if rs[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(rs) {
				return nil, fmt.Errorf("unterminated string")
			}
			toks = append(toks, string(rs[i:j+1]))
			i = j + 1
		case strings.ContainsRune("()[],-", r):
			toks = append(toks, string(r))
			i++
		case r == '>' || r == '<':
			if i+1 < len(rs) && rs[i+1] == '=' {
				toks = append(toks, string(rs[i:i+2]))
				i += 2
			} else {
				toks = append(toks, string(r))
				i++
			}
		case r == '=' || r == '!' || r == '&' || r == '|':
			if i+1 < len(rs) && (rs[i+1] == '=' || rs[i+1] == r) {
				toks = append(toks, string(rs[i:i+2]))
				i += 2
			} else {
				return nil, fmt.Errorf("bad operator at %d", i)
			}
		case r >= '0' && r <= '9':
			j := i
			for j < len(rs) && (unicode.IsDigit(rs[j]) || rs[j] == '.' || rs[j] == 'e' || rs[j] == 'E' ||
				((rs[j] == '+' || rs[j] == '-') && (rs[j-1] == 'e' || rs[j-1] == 'E'))) {
				j++
			}
			toks = append(toks, string(rs[i:j]))
			i = j
		case r == '_' || unicode.IsLetter(r):
			j := i
			for j < len(rs) && (rs[j] == '_' || unicode.IsLetter(rs[j]) || unicode.IsDigit(rs[j])) {
				j++
			}
			toks = append(toks, string(rs[i:j]))
			i = j
		default:
			return nil, fmt.Errorf("unexpected character %q", r)
		}
	}
	return toks, nil
}
