package reader

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/docmind/docmind/shared/answer/inject"
	"github.com/docmind/docmind/shared/answer/lang"
	"github.com/docmind/docmind/shared/rank"
)

// The offline summary's notice in each language: what it is, so that it is not read as a summary a
// model wrote.
const (
	OfflineSummaryNotice   = "No language model is configured, so this summary quotes the selected documents in their own words: passages read in order, evenly spaced from beginning to end, each under the part of the document it comes from."
	OfflineSummaryNoticeZH = "未配置语言模型，以下摘要引用所选文档的原文：段落按顺序从开头到结尾均匀选取，每段注明它在文档中的位置。"
)

// MaxSummaryLines bounds the lines an offline summary quotes.
const MaxSummaryLines = 12

// Summarise answers a summary question over passages read in order from the selected documents
// (ev[i] is source i+1, labels[i] where it lies in its document, "" when unknown): under the notice,
// each passage in reading order, its part as a heading line (no citation, so not a claim), then its
// opening sentence, or two when few passages were read, quoted with its [n]. Code, headings, titles
// and a flagged passage's instructing sentences are never quoted (as in Read). Without a model this is
// a summary by quotation: the document's own words, beginning to end, each saying where it is from.
func (x Extractive) Summarise(query string, ev []rank.Evidence, labels []string) string {
	x = x.defaults()
	say := offlineFor(query)
	if len(ev) == 0 {
		return say.noEvidence
	}
	flagged := map[int]bool{}
	flags := inject.Passages(ev)
	for _, f := range flags {
		flagged[f.Source-1] = true
	}
	per := 1
	if 2*len(ev) <= MaxSummaryLines {
		per = 2
	}
	// more passages than lines: every k-th, still from the first to the last
	step := max(1, (len(ev)+MaxSummaryLines-1)/MaxSummaryLines)
	var b strings.Builder
	notice := OfflineSummaryNotice
	if lang.HasCJK(query) {
		notice = OfflineSummaryNoticeZH
	}
	b.WriteString(notice)
	b.WriteString("\n")
	quoted := 0
	for i := 0; i < len(ev); i++ {
		if i%step != 0 && i != len(ev)-1 || quoted >= MaxSummaryLines {
			continue
		}
		e := ev[i]
		body := e.Text
		if strings.TrimSpace(body) == "" {
			body = e.ChildText
		}
		var unsafe func(string) bool
		if flagged[i] {
			unsafe = inject.Unsafe(e)
		}
		var lines []string
		for _, u := range x.units(i, body, nil, false, nil) {
			if len(lines) == per {
				break
			}
			if u.code || u.row != nil || utf8.RuneCountInString(u.show) < 12 || unsafe != nil && unsafe(u.show) {
				continue
			}
			lines = append(lines, u.show)
		}
		if len(lines) == 0 {
			// a passage that is a table: its columns say what it lists (its rows answer questions)
			if h := tableHeader(body); h != "" {
				lines = append(lines, h)
			}
		}
		if len(lines) == 0 {
			continue
		}
		if label := lang.OneLine(labels[i]); label != "" {
			fmt.Fprintf(&b, "\n%s (%s)\n", label, e.FileName)
		} else {
			fmt.Fprintf(&b, "\n%s\n", e.FileName)
		}
		for _, l := range lines {
			fmt.Fprintf(&b, "- %s [%d]\n", l, i+1)
			quoted++
		}
	}
	if quoted == 0 {
		return say.noMatch
	}
	out, _ := inject.Sanitise(strings.TrimRight(b.String(), "\n"), ev, flags)
	return out
}

// tableHeader is a passage's first markdown table's header cells, "月可用性 / 返还比例", or "".
func tableHeader(body string) string {
	for _, l := range strings.Split(body, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "|") {
			var cells []string
			for _, c := range splitRow(l) {
				if c != "" {
					cells = append(cells, c)
				}
			}
			if len(cells) < 2 {
				return ""
			}
			return strings.Join(cells, " / ")
		}
	}
	return ""
}
