package extract

import (
	"bytes"
	"context"
	"strings"

	readability "codeberg.org/readeck/go-readability/v2"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// parseHTML keeps the page's main content (go-readability), falling back to the whole body when the
// page is too short for readability to judge, and renders it as markdown. Elements a reader cannot see
// (hidden, aria-hidden, display:none, visibility:hidden, zero font size) and comments are dropped and
// counted before anything else looks at the page.
func parseHTML(ctx context.Context, data []byte, l Limits) (Result, error) {
	s, enc, err := decodeHTML(data)
	if err != nil {
		return Result{}, err
	}
	doc, err := html.ParseWithOptions(strings.NewReader(s), html.ParseOptionEnableScripting(false))
	if err != nil {
		return Result{}, Terminal("html: %v", err)
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	hidden := stripHidden(doc)
	title := ""
	content := findBody(doc)
	var buf bytes.Buffer
	html.Render(&buf, doc)
	if art, err := readability.FromReader(&buf, nil); err == nil && art.Node != nil {
		title = strings.TrimSpace(art.Title())
		var probe strings.Builder
		(&mdWriter{b: &probe}).block(art.Node)
		if len([]rune(strings.TrimSpace(probe.String()))) >= 200 {
			content = art.Node
		}
	}
	if content == nil {
		return Result{}, Terminal("the HTML page has no body")
	}
	var b strings.Builder
	if title != "" {
		b.WriteString("# " + title + "\n\n")
	}
	w := &mdWriter{b: &b, skipTitle: title}
	w.block(content)
	return Result{Markdown: b.String(), Title: title, Hidden: hidden, Encoding: enc}, nil
}

func findBody(n *node0) *node0 {
	if n.Type == html.ElementNode && n.DataAtom == atom.Body {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if b := findBody(c); b != nil {
			return b
		}
	}
	return nil
}

type node0 = html.Node

func isHiddenElement(n *html.Node) bool {
	switch n.DataAtom {
	case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Iframe, atom.Svg, atom.Object, atom.Embed, atom.Head, atom.Button, atom.Select, atom.Input, atom.Form, atom.Nav:
		return true
	}
	for _, a := range n.Attr {
		switch strings.ToLower(a.Key) {
		case "hidden":
			return true
		case "aria-hidden":
			if strings.EqualFold(a.Val, "true") {
				return true
			}
		case "style":
			st := strings.ToLower(strings.ReplaceAll(a.Val, " ", ""))
			if strings.Contains(st, "display:none") || strings.Contains(st, "visibility:hidden") ||
				strings.Contains(st, "font-size:0") || strings.Contains(st, "opacity:0;") || strings.HasSuffix(st, "opacity:0") {
				return true
			}
		}
	}
	return false
}

// stripHidden removes hidden elements and comments in place and returns how many it removed (scripts,
// styles and navigation are not counted: they are not hidden text, just not content).
func stripHidden(n *html.Node) int {
	count := 0
	for c := n.FirstChild; c != nil; {
		next := c.NextSibling
		switch {
		case c.Type == html.CommentNode:
			count++
			n.RemoveChild(c)
		case c.Type == html.ElementNode && isHiddenElement(c):
			switch c.DataAtom {
			case atom.Script, atom.Style, atom.Noscript, atom.Template, atom.Head, atom.Nav, atom.Button, atom.Select, atom.Input, atom.Form:
			default:
				count++
			}
			if c.DataAtom != atom.Head {
				n.RemoveChild(c)
			} else {
				count += stripHidden(c)
			}
		default:
			count += stripHidden(c)
		}
		c = next
	}
	return count
}

// mdWriter renders an HTML subtree as markdown.
type mdWriter struct {
	b         *strings.Builder
	skipTitle string
}

func (w *mdWriter) block(n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.node(c)
	}
}

func (w *mdWriter) node(n *html.Node) {
	switch n.Type {
	case html.TextNode:
		t := collapse(n.Data)
		if t == "" {
			if n.Data != "" {
				w.b.WriteString(" ")
			}
			return
		}
		if strings.TrimLeft(n.Data, " \t\n") != n.Data {
			t = " " + t
		}
		if strings.TrimRight(n.Data, " \t\n") != n.Data {
			t += " "
		}
		w.b.WriteString(t)
		return
	case html.ElementNode:
	default:
		return
	}
	switch n.DataAtom {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		level := int(n.Data[1] - '0')
		t := inline(n)
		if t == "" || (level == 1 && t == w.skipTitle) {
			return
		}
		w.b.WriteString("\n\n" + strings.Repeat("#", level) + " " + t + "\n\n")
	case atom.P, atom.Div, atom.Section, atom.Article, atom.Main, atom.Header, atom.Footer, atom.Aside, atom.Figure, atom.Dl:
		w.b.WriteString("\n\n")
		w.block(n)
		w.b.WriteString("\n\n")
	case atom.Br:
		w.b.WriteString("\n")
	case atom.Ul, atom.Ol:
		w.b.WriteString("\n\n")
		for li := n.FirstChild; li != nil; li = li.NextSibling {
			if li.Type == html.ElementNode && li.DataAtom == atom.Li {
				if t := inline(li); t != "" {
					w.b.WriteString("- " + t + "\n")
				}
			}
		}
		w.b.WriteString("\n")
	case atom.Pre:
		w.b.WriteString("\n\n```\n" + strings.Trim(textOf(n), "\n") + "\n```\n\n")
	case atom.Table:
		var rows [][]string
		var walk func(*html.Node)
		walk = func(x *html.Node) {
			for c := x.FirstChild; c != nil; c = c.NextSibling {
				if c.Type != html.ElementNode {
					continue
				}
				if c.DataAtom == atom.Tr {
					var row []string
					for td := c.FirstChild; td != nil; td = td.NextSibling {
						if td.Type == html.ElementNode && (td.DataAtom == atom.Td || td.DataAtom == atom.Th) {
							row = append(row, inline(td))
						}
					}
					if len(row) > 0 {
						rows = append(rows, row)
					}
				} else if c.DataAtom != atom.Table { // nested tables are flattened into their cell text
					walk(c)
				}
			}
		}
		walk(n)
		if len(rows) > 0 {
			w.b.WriteString("\n\n" + tables(rows, tableRows) + "\n")
		}
	case atom.Blockquote:
		w.b.WriteString("\n\n> " + inline(n) + "\n\n")
	case atom.Img:
		// images carry no text we trust (alt text is a favourite hiding place); skipped
	case atom.Code:
		w.b.WriteString("`" + strings.ReplaceAll(textOf(n), "`", "'") + "` ")
	default:
		w.block(n)
	}
}

func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(x *html.Node) {
		if x.Type == html.TextNode {
			b.WriteString(x.Data)
		}
		for c := x.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

func inline(n *html.Node) string { return collapse(textOf(n)) }

func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }
