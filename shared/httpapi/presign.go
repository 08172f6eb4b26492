package httpapi

import (
	"context"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/docmind/docmind/shared/rag"
)

// Presigner issues a URL through which the client sends one file straight to storage (AWS: an S3
// presigned PUT), so that a file of any size never passes through API Gateway (10 MB) or a Lambda's
// synchronous payload (6 MB).
type Presigner interface {
	// PresignUpload creates the document (pending, the requester's upload) in the knowledge base the
	// requester's editor role was checked on, and returns where and how to send its bytes. Invalid for a
	// file type that is not supported; NotFound when the knowledge base is gone.
	PresignUpload(ctx context.Context, req PresignRequest) (PresignedUpload, error)
}

// PresignRequest is one presigned upload asked for: the file's name, exact size and content type.
type PresignRequest struct {
	Tenant, KBID, UserID string
	FileName             string
	Size                 int64
	ContentType          string
}

// PresignedUpload is where and how the client sends the file: one request of Method to URL carrying
// every header of Headers, with exactly the declared size, before ExpiresAt.
type PresignedUpload struct {
	DocumentID string            `json:"document_id"`
	URL        string            `json:"url"`
	Method     string            `json:"method"`
	Headers    map[string]string `json:"headers"`
	ExpiresAt  time.Time         `json:"expires_at"`
	MaxBytes   int64             `json:"max_bytes"`
}

// uploadMode is GET /api/kbs's "upload": how the page sends a file, and the largest it may send.
type uploadMode struct {
	Mode     string `json:"mode"` // "direct" (multipart POST /api/kbs/{kb}/documents) or "presigned" (POST /api/kbs/{kb}/uploads)
	MaxBytes int64  `json:"max_bytes"`
}

func (l *library) uploadMode() uploadMode {
	if l.h.d.Presigner != nil {
		return uploadMode{Mode: "presigned", MaxBytes: l.maxBytes}
	}
	return uploadMode{Mode: "direct", MaxBytes: l.maxBytes}
}

// presignRequest is the body of POST /api/kbs/{kb}/uploads.
type presignRequest struct {
	FileName    string `json:"file_name"`
	Size        *int64 `json:"size"`
	ContentType string `json:"content_type"`
}

// presignUpload is POST /api/kbs/{kb}/uploads: 201 with the URL to PUT the file to, for an editor of the
// knowledge base. The document is created (pending) now; its status moves once the file has arrived.
func (l *library) presignUpload(w http.ResponseWriter, r *http.Request) {
	p, kb, ok := l.kbAccess(w, r, rag.KBEditor)
	if !ok {
		return
	}
	if l.h.d.Presigner == nil {
		l.fail(w, r, rag.Errorf("httpapi", rag.KindNotFound, "presigned uploads are not enabled here: send the file to POST /api/kbs/{kb}/documents"))
		return
	}
	// a URL costs no bytes here, but makes a document row: limited per user like the other calls that cost
	if admitted, _ := l.h.admit(w, r, p); !admitted {
		return
	}
	var in presignRequest
	const shape = `{"file_name": "...", "size": bytes, "content_type": "..."}`
	if err := decodeBody(w, r, &in, shape); err != nil {
		l.fail(w, r, err)
		return
	}
	if err := l.checkPresign(in); err != nil {
		l.fail(w, r, err)
		return
	}
	if *in.Size > l.maxBytes {
		WriteJSON(w, http.StatusRequestEntityTooLarge, map[string]map[string]string{"error": {"code": "TooLarge",
			"message": fmt.Sprintf("the file is %d bytes, larger than the upload limit of %d bytes", *in.Size, l.maxBytes)}})
		return
	}
	up, err := l.h.d.Presigner.PresignUpload(r.Context(), PresignRequest{Tenant: p.Tenant, KBID: kb.ID, UserID: p.UserID,
		FileName: in.FileName, Size: *in.Size, ContentType: in.ContentType})
	if err != nil {
		l.fail(w, r, err)
		return
	}
	up.MaxBytes = l.maxBytes
	l.h.audit(r.Context(), p, "document.upload_url", up.DocumentID, kb.ID)
	WriteJSON(w, http.StatusCreated, up)
}

// checkPresign says what is wrong with a presigned upload's request, in the request's own field names.
func (l *library) checkPresign(in presignRequest) error {
	bad := func(format string, args ...any) error { return rag.Errorf("httpapi", rag.KindInvalid, format, args...) }
	switch {
	case strings.TrimSpace(in.FileName) == "":
		return bad("file_name is required: the file's name, whose extension chooses the parser")
	case len(in.FileName) > 1024:
		return bad("file_name is longer than 1024 bytes")
	case in.Size == nil:
		return bad("size is required: the file's exact size in bytes (the URL accepts only that many)")
	case *in.Size == 0:
		return bad("size is 0: an empty file has nothing in it to add")
	case *in.Size < 0:
		return bad("size must be a positive number of bytes, got %d", *in.Size)
	case in.ContentType == "":
		return bad("content_type is required (for example text/markdown or application/pdf; application/octet-stream when unknown)")
	case len(in.ContentType) > 255 || strings.ContainsAny(in.ContentType, "\r\n"):
		return bad("content_type must be one line of at most 255 bytes")
	}
	if _, _, err := mime.ParseMediaType(in.ContentType); err != nil {
		return bad("content_type %q is not a media type (type/subtype)", in.ContentType)
	}
	return nil
}
