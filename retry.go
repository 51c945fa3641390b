package tabula

import (
	"context"
	"errors"
)

// Retry calls fn until it succeeds, fails with an error the service says not to retry, or
// the policy's attempts are used up, waiting between attempts with the exponential backoff
// the service's guidance prescribes (see Backoff; its zero value is a sensible policy for a
// local engine). Only ServerBusy (503) and OperationTimedOut (500) are retried, as the
// guidance advises; everything else, 4xx and 501 included, is returned at once. It returns
// nil, or fn's last error unchanged, or, when ctx is done before or while waiting, an error
// that wraps both ctx.Err() and fn's last error (errors.Is finds either). Inject the policy's
// Sleep and Rand to make the waits exact in tests.
func Retry(ctx context.Context, policy Backoff, fn func() error) error {
	return retry(ctx, policy, fn, IsRetryable)
}

// IsRetryable reports whether err is one the service's guidance says to retry: ServerBusy
// or OperationTimedOut.
func IsRetryable(err error) bool {
	return errors.Is(err, ErrServerBusy) || errors.Is(err, ErrOperationTimedOut)
}
