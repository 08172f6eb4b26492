package main

import (
	"strings"
	"testing"
)

// Issue #20 item 6 offline, on the demo through the real server (SQLite, the offline reader): a
// summary question over the selected service agreement reads it in order, first passage first, and
// quotes each passage under its part; a specific question over it still searches.
func TestDemoReadsSelectedDocument(t *testing.T) {
	_, base := startServer(t, nil)
	docs := waitDemo(t, base)
	var agreement string
	for _, d := range docs.Documents {
		if d.FileName == "服务协议.pdf" {
			agreement = d.ID
		}
	}
	events := streamChat(t, base, map[string]any{"question": "总结这份文档", "documents": []string{agreement}})
	done := doneOf(t, events)
	if done.Path != "SELECTED_DOC" || eventData(events, "routing")["reason"] != "SELECTED_DOC_READ" || len(done.Sources) == 0 {
		t.Fatalf("done %+v", done)
	}
	for i, s := range done.Sources {
		if s.DocumentID != agreement || s.Part == nil || s.Part.Index != i+1 {
			t.Fatalf("source %d: %+v (the agreement is short: every passage is read, in order)", i, s)
		}
	}
	for _, want := range []string{"第 1 部分（共", "[1]", "本服务为企业提供基于文档的智能问答。", "月可用性 / 返还比例 [2]", "第 3 部分（共"} {
		if !strings.Contains(done.Answer, want) {
			t.Errorf("the summary lacks %q:\n%s", want, done.Answer)
		}
	}
	events = streamChat(t, base, map[string]any{"question": "月可用性低于95%时返还多少服务费？", "documents": []string{agreement}})
	done = doneOf(t, events)
	if eventData(events, "routing")["reason"] != "SELECTED_DOC" || !strings.Contains(done.Answer, "50%") {
		t.Fatalf("a specific question over the selection: %+v", done)
	}
}
