package extract

import (
	"strings"
	"testing"

	"github.com/docmind/docmind/shared/chunk"
	"github.com/docmind/docmind/shared/rag"
)

// The demo's service agreement: its refund table reaches the chunker as one markdown table, so the
// "below 95%" row keeps its 50%.
func TestDemoAgreementTable(t *testing.T) {
	res := mustExtract(t, "服务协议.pdf", read(t, "服务协议.pdf"))
	want := "| 月可用性 | 返还比例 |\n| --- | --- |\n| 99.0% 至 99.9% | 10% |\n| 95.0% 至 99.0% | 25% |\n| 低于 95.0% | 50% |"
	if !strings.Contains(res.Markdown, want) {
		t.Fatalf("no refund table in\n%s", res.Markdown)
	}
	for _, text := range []string{"服务月可用性不低于 99.9%。未达到时，按下表返还服务费：", "## 第四条 协议终止", "任何一方提前 30 天书面通知"} {
		if !strings.Contains(res.Markdown, text) && !strings.Contains(res.Markdown, strings.TrimPrefix(text, "## ")) {
			t.Errorf("text around the table lost: %q not in\n%s", text, res.Markdown)
		}
	}
	var tables []chunk.Piece
	for _, c := range chunk.Split(res.Markdown, chunk.DefaultOptions()).Children {
		if c.ContentType == rag.ContentTable {
			tables = append(tables, c)
		}
	}
	if len(tables) != 1 || !strings.Contains(tables[0].Text, want) {
		t.Fatalf("want one table chunk holding the whole table, got %d: %+v", len(tables), tables)
	}
}

func box(text string, left, top, right float64) textBox {
	return textBox{text: text, left: left, top: top, right: right, bottom: top - 10}
}

// Column alignment: aligned pieces make a table, a merged header is repeated over its columns, and
// prose (one piece a line, or two long columns) is not a table.
func TestFindTables(t *testing.T) {
	t.Run("merged header", func(t *testing.T) {
		got := findTables([]textBox{
			box("Region", 50, 700, 90), box("Sales", 150, 700, 260),
			box("2023", 150, 680, 180), box("2024", 230, 680, 260),
			box("North", 50, 660, 85), box("10", 150, 660, 162), box("12", 230, 660, 242),
			box("South", 50, 640, 85), box("7", 150, 640, 156), box("9", 230, 640, 236),
		})
		if len(got) != 1 {
			t.Fatalf("%d tables", len(got))
		}
		want := "| Region | Sales | Sales |\n| --- | --- | --- |\n|  | 2023 | 2024 |\n| North | 10 | 12 |\n| South | 7 | 9 |"
		if md := got[0].markdown(); md != want {
			t.Errorf("got\n%s\nwant\n%s", md, want)
		}
	})
	t.Run("prose", func(t *testing.T) {
		long := "a long line of running text that fills the column from one side to the other"
		if got := findTables([]textBox{box("One line of text", 50, 700, 400), box("and another", 50, 685, 300),
			box(long, 50, 660, 280), box(long, 300, 660, 540), box(long, 50, 645, 280), box(long, 300, 645, 540)}); len(got) != 0 {
			t.Errorf("prose taken for a table: %+v", got)
		}
	})
	t.Run("rows apart", func(t *testing.T) {
		if got := findTables([]textBox{box("Name", 50, 700, 90), box("Age", 150, 700, 180), box("Ann", 50, 500, 80), box("31", 150, 500, 165)}); len(got) != 0 {
			t.Errorf("lines far apart taken for a table: %+v", got)
		}
	})
	t.Run("pipe escaped", func(t *testing.T) {
		got := findTables([]textBox{box("a|b", 50, 700, 80), box("c", 150, 700, 160), box("d", 50, 685, 60), box("e", 150, 685, 160)})
		if len(got) != 1 || !strings.Contains(got[0].markdown(), `| a\|b | c |`) {
			t.Errorf("got %+v", got)
		}
	})
}
