package ingest

import (
	"context"
	"strings"
	"testing"

	"golang.org/x/text/encoding/simplifiedchinese"

	"github.com/docmind/docmind/shared/extract"
	"github.com/docmind/docmind/shared/rag"
)

// A GBK text file is ingested (not refused), its chunks hold the Chinese text and the document row
// names the encoding it was read from (issue 15, item 5).
func TestIngestGBKRecordsEncoding(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	text := "年假制度\n\n员工入职满一年后，每年享有十天带薪年假。年假应当提前两周向直属主管申请。"
	data, err := simplifiedchinese.GBK.NewEncoder().Bytes([]byte(text))
	if err != nil {
		t.Fatal(err)
	}
	rep, err := e.svc.Ingest(ctx, tenant, Source{KBName: "hr", URI: "inbox/hr/leave.txt", Name: "leave.txt", Data: data})
	if err != nil || rep.Status != rag.StatusReady {
		t.Fatalf("ingest: %+v, %v", rep, err)
	}
	doc, err := e.db.GetDocument(ctx, tenant, rep.DocumentID)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Encoding != extract.EncGB18030 {
		t.Errorf("document encoding = %q, want %q", doc.Encoding, extract.EncGB18030)
	}
	cs, err := e.db.ListChunks(ctx, tenant, rep.DocumentID)
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, c := range cs {
		all.WriteString(c.Content)
	}
	if !strings.Contains(all.String(), "带薪年假") || strings.Contains(all.String(), "\uFFFD") {
		t.Errorf("chunks do not hold the decoded text:\n%s", all.String())
	}
}
