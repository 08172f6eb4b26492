package extract

import (
	"context"
	"encoding/csv"
	"errors"
	"io"
	"strings"
)

func parseMarkdown(_ context.Context, data []byte, _ Limits) (Result, error) {
	s, enc, err := decodeText(data)
	if err != nil {
		return Result{}, err
	}
	return Result{Markdown: s, Title: firstHeading(s), Encoding: enc}, nil
}

// parseText keeps plain text as paragraphs; characters that markdown would read as structure at the
// start of a line are escaped so a line "# 1" in a text file does not become a heading.
func parseText(_ context.Context, data []byte, _ Limits) (Result, error) {
	s, enc, err := decodeText(data)
	if err != nil {
		return Result{}, err
	}
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		t := strings.TrimLeft(l, " ")
		if strings.HasPrefix(t, "#") || strings.HasPrefix(t, "|") || strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") || strings.HasPrefix(t, "<!--") {
			lines[i] = "\\" + t
		}
	}
	return Result{Markdown: strings.Join(lines, "\n"), Encoding: enc}, nil
}

func firstHeading(md string) string {
	for _, l := range strings.Split(md, "\n") {
		if strings.HasPrefix(l, "# ") {
			return strings.TrimSpace(l[2:])
		}
	}
	return ""
}

// tableRows is how many data rows one markdown table holds: a larger sheet becomes several tables that
// repeat the header, so every table stays an atomic chunk of reasonable size.
const tableRows = 20

func parseCSV(ctx context.Context, data []byte, _ Limits) (Result, error) {
	s, enc, err := decodeText(data)
	if err != nil {
		return Result{}, err
	}
	r := csv.NewReader(strings.NewReader(s))
	r.FieldsPerRecord = -1
	r.LazyQuotes = true
	var rows [][]string
	for {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		rec, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Result{}, Terminal("csv: %v", err)
		}
		rows = append(rows, rec)
	}
	if len(rows) == 0 {
		return Result{}, Terminal("the CSV file is empty")
	}
	return Result{Markdown: tables(rows, tableRows), Encoding: enc}, nil
}

// tables renders rows (the first is the header) as markdown tables of at most per data rows each.
func tables(rows [][]string, per int) string {
	if len(rows) == 0 {
		return ""
	}
	width := 0
	for _, r := range rows {
		width = max(width, len(r))
	}
	header := rows[0]
	var b strings.Builder
	for start := 1; start < len(rows) || start == 1; start += per {
		end := min(start+per, len(rows))
		writeRow(&b, header, width)
		b.WriteString("|" + strings.Repeat(" --- |", width) + "\n")
		for _, r := range rows[start:end] {
			writeRow(&b, r, width)
		}
		b.WriteString("\n")
		if end >= len(rows) {
			break
		}
	}
	return b.String()
}

func writeRow(b *strings.Builder, cells []string, width int) {
	b.WriteString("|")
	for i := 0; i < width; i++ {
		c := ""
		if i < len(cells) {
			c = cells[i]
		}
		c = strings.Join(strings.Fields(c), " ") // newlines inside a cell would break the table
		c = strings.ReplaceAll(c, "|", "\\|")
		b.WriteString(" " + c + " |")
	}
	b.WriteString("\n")
}
