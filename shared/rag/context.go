package rag

import (
	"context"
	"errors"
	"time"
)

func isContextErr(err error) bool {
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// Wait sleeps for d or until ctx ends, whichever comes first; it returns ctx's error in the second case.
// Every retry loop waits with it, so a cancelled request never sleeps through its backoff.
func Wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
