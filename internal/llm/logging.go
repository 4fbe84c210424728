package llm

import (
	"context"
	"errors"
	"log/slog"
	"time"
)

// WithLogging logs every call to c (every attempt, when placed inside
// WithRetry) at debug level: provider, model, purpose, status, latency,
// request id and tokens. It never logs request or response bodies, and error
// text comes from Error.Error(), which adapters keep free of keys. A nil
// logger returns c unchanged.
func WithLogging(c Client, l *slog.Logger, provider, model string) Client {
	if l == nil {
		return c
	}
	return &logClient{next: c, l: l, provider: provider, model: model}
}

type logClient struct {
	next            Client
	l               *slog.Logger
	provider, model string
}

func (w *logClient) Complete(ctx context.Context, req Request) (Response, error) {
	if !w.l.Enabled(ctx, slog.LevelDebug) {
		return w.next.Complete(ctx, req)
	}
	start := time.Now()
	resp, err := w.next.Complete(ctx, req)
	attrs := make([]slog.Attr, 0, 12)
	attrs = append(attrs,
		slog.String("provider", w.provider),
		slog.String("model", w.model),
		slog.String("purpose", string(req.Purpose)),
		slog.Duration("latency", time.Since(start)),
	)
	if err == nil {
		attrs = append(attrs,
			slog.Int("status", 200),
			slog.String("request_id", resp.RequestID),
			slog.String("finish_reason", resp.FinishReason),
			slog.Int("input_tokens", resp.Usage.InputTokens),
			slog.Int("output_tokens", resp.Usage.OutputTokens),
			slog.Int("cached_input_tokens", resp.Usage.CachedInputTokens),
			slog.Int("cache_write_tokens", resp.Usage.CacheWriteTokens),
			slog.Int("reasoning_tokens", resp.Usage.ReasoningTokens),
		)
		w.l.LogAttrs(ctx, slog.LevelDebug, "llm call", attrs...)
		return resp, nil
	}
	var e *Error
	if errors.As(err, &e) {
		attrs = append(attrs,
			slog.Int("status", e.StatusCode),
			slog.String("kind", string(e.Kind)),
			slog.String("request_id", e.RequestID),
			slog.Duration("retry_after", e.RetryAfter),
		)
	}
	attrs = append(attrs, slog.String("error", err.Error()))
	w.l.LogAttrs(ctx, slog.LevelDebug, "llm call failed", attrs...)
	return resp, err
}
