package callstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/smithy-go"
	"gocloud.dev/blob"
	_ "gocloud.dev/blob/azureblob" // azblob://
	_ "gocloud.dev/blob/gcsblob"   // gs://
	_ "gocloud.dev/blob/s3blob"    // s3://
	"gocloud.dev/gcerrors"

	"github.com/impactbench/impactbench/internal/ids"
	"github.com/impactbench/impactbench/internal/sanitize"
)

// StoreKey is the configuration key a store URL comes from, named in
// errors.
const StoreKey = "store"

// Kinds of URLError, for errors.Is.
var (
	ErrUnknownScheme = errors.New("unknown store scheme")
	ErrBadURL        = errors.New("invalid store URL")
	ErrNoBucket      = errors.New("store bucket does not exist")
	ErrCredentials   = errors.New("store credentials refused")
	ErrUnreachable   = errors.New("store unreachable")
	ErrStore         = errors.New("store not usable")
)

// URLError is a store URL that cannot be used: its Kind (one of the Err…
// values above) says why, so that a command can refuse it (exit 2) before
// any call is paid. URL has its credentials redacted; so has Err's text.
type URLError struct {
	Key  string // StoreKey
	URL  string
	Kind error
	Err  error
}

func (e *URLError) Error() string {
	msg := fmt.Sprintf("%s: %s: %v", e.Key, e.URL, e.Kind)
	if e.Err != nil {
		msg += ": " + sanitize.URLsIn(e.Err.Error())
	}
	return msg
}

// Is matches the error's Kind.
func (e *URLError) Is(target error) bool { return target == e.Kind }

// Unwrap gives the cause (for its gocloud error code).
func (e *URLError) Unwrap() error { return e.Err }

// OpenURL opens the store at raw: a directory (a path, or file:///path)
// is the local store; s3://bucket/prefix, gs://bucket/prefix and
// azblob://container/prefix are stores on object storage, reached with
// the credentials of the provider's usual environment (AWS_*, Google
// application default credentials, AZURE_*). Query parameters go to the
// driver (for S3: region, endpoint, use_path_style, …). An object store is
// probed before OpenURL returns: a bucket that does not exist, credentials
// that are refused or a store that cannot be reached is a *URLError.
func OpenURL(ctx context.Context, raw string, o Options) (*Store, error) {
	shown := sanitize.URL(raw)
	fail := func(kind, err error) error { return &URLError{Key: StoreKey, URL: shown, Kind: kind, Err: err} }
	switch {
	case strings.TrimSpace(raw) == "":
		return nil, fail(ErrBadURL, errors.New("it is empty"))
	case !strings.Contains(raw, "://"):
		return OpenDir(raw, o), nil // a path (C:\… included), not a URL
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fail(ErrBadURL, errors.New("it does not parse as a URL"))
	}
	switch strings.ToLower(u.Scheme) {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return nil, fail(ErrBadURL, errors.New("a file URL names no host: file:///path"))
		}
		return OpenDir(u.Path, o), nil
	case "s3", "gs", "azblob":
	default:
		return nil, fail(ErrUnknownScheme, fmt.Errorf("%q; use a directory, file://, s3://, gs:// or azblob://", u.Scheme))
	}
	if u.User != nil {
		return nil, fail(ErrBadURL, errors.New("it holds credentials; give them to the provider's environment (e.g. AWS_ACCESS_KEY_ID), never in the URL"))
	}
	if u.Host == "" {
		return nil, fail(ErrBadURL, errors.New("it names no bucket"))
	}
	prefix, err := checkPrefix(u.Path)
	if err != nil {
		return nil, fail(ErrBadURL, err)
	}
	bucketURL := (&url.URL{Scheme: strings.ToLower(u.Scheme), Host: u.Host, RawQuery: u.RawQuery}).String()
	b, err := blob.OpenBucket(ctx, bucketURL)
	if err != nil {
		return nil, fail(classifyOpen(err), err)
	}
	s, err := OpenBucket(ctx, b, prefix, o)
	if err != nil {
		b.Close()
		var ue *URLError
		if errors.As(err, &ue) {
			ue.URL = shown
		}
		return nil, err
	}
	s.loc = shown
	return s, nil
}

// checkPrefix turns a URL path into an object-key prefix ("" or ending in
// '/'), each of its elements an id (package ids): no "..", no empty
// element, nothing that could reach outside it.
func checkPrefix(p string) (string, error) {
	p = strings.TrimPrefix(p, "/")
	p = strings.TrimSuffix(p, "/")
	if p == "" {
		return "", nil
	}
	for _, el := range strings.Split(p, "/") {
		if problem := ids.Problem(el, ids.MaxName); problem != "" {
			return "", fmt.Errorf("prefix element %s: %s", ids.Quote(el), problem)
		}
	}
	return p + "/", nil
}

// probeTimeout bounds the probe of a new object store.
const probeTimeout = 60 * time.Second

// OpenBucket returns a store in b under prefix ("" or a '/'-separated path
// of ids), after probing that the bucket exists and takes a write: a
// marker object, <prefix>.impactbench-store, written create-once. The
// Store owns b (Close closes it).
func OpenBucket(ctx context.Context, b *blob.Bucket, prefix string, o Options) (*Store, error) {
	prefix, err := checkPrefix(prefix)
	if err != nil {
		return nil, &URLError{Key: StoreKey, Kind: ErrBadURL, Err: err}
	}
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	ok, err := b.IsAccessible(pctx)
	if err == nil && !ok {
		return nil, &URLError{Key: StoreKey, Kind: ErrNoBucket}
	}
	if err == nil {
		err = b.WriteAll(pctx, prefix+".impactbench-store", []byte(`{"format":"`+formatVersion+`"}`),
			&blob.WriterOptions{IfNotExist: true, ContentType: "application/json"})
		if gcerrors.Code(err) == gcerrors.FailedPrecondition {
			err = nil // written before: the store exists
		}
	}
	if err != nil {
		if noRegion(err) {
			// The SDK's words ("resolve auth scheme: … Invalid region")
			// would otherwise pass for refused credentials.
			return nil, &URLError{Key: StoreKey, Kind: ErrBadURL,
				Err: fmt.Errorf("no region for the bucket: add ?region=… (the bucket's region, e.g. ?region=eu-west-1) to the URL, or set AWS_REGION: %w", err)}
		}
		return nil, &URLError{Key: StoreKey, Kind: classify(err), Err: err}
	}
	bb := &blobBackend{b: b, prefix: prefix}
	if o.Survey {
		bb.floors = newFloors()
	}
	return &Store{be: bb, force: o.Force}, nil
}

// credentialCodes are the S3 error codes of credentials that were refused.
var credentialCodes = map[string]bool{
	"InvalidAccessKeyId": true, "SignatureDoesNotMatch": true, "AccessDenied": true, "ExpiredToken": true,
	"InvalidToken": true, "TokenRefreshRequired": true, "AuthorizationHeaderMalformed": true, "Forbidden": true,
	"InvalidClientTokenId": true, "AllAccessDisabled": true,
}

// noRegion is the S3 client's refusal to build a request without a
// usable region (none in the URL, AWS_REGION or the shared config).
func noRegion(err error) bool {
	return strings.Contains(strings.ToLower(err.Error()), "invalid region")
}

// classify names the kind of an error from the store's first requests.
func classify(err error) error {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		switch {
		case credentialCodes[ae.ErrorCode()]:
			return ErrCredentials
		case ae.ErrorCode() == "NoSuchBucket":
			return ErrNoBucket
		}
	}
	switch gcerrors.Code(err) {
	case gcerrors.PermissionDenied:
		return ErrCredentials
	case gcerrors.NotFound:
		return ErrNoBucket
	}
	var ne net.Error
	var oe *net.OpError
	var de *net.DNSError
	if errors.As(err, &oe) || errors.As(err, &de) || (errors.As(err, &ne) && ne.Timeout()) {
		return ErrUnreachable
	}
	return classifyOpen(err)
}

// classifyOpen names the kind of an error opening a bucket (before any
// request): missing credentials, or a parameter the driver refused.
func classifyOpen(err error) error {
	msg := strings.ToLower(err.Error())
	if strings.Contains(msg, "credential") || strings.Contains(msg, "auth") {
		return ErrCredentials
	}
	if strings.Contains(msg, "parameter") || strings.Contains(msg, "invalid value") {
		return ErrBadURL
	}
	return ErrStore
}

// Sub is the store location elem (an id: a benchmark's slug) inside the
// store at raw: <dir>/<elem> for a directory, the URL with /<elem> added to
// its path (its query kept) otherwise. A URL that does not parse is left
// for OpenURL to refuse.
func Sub(raw, elem string) (string, error) {
	if problem := ids.Problem(elem, ids.MaxName); problem != "" {
		return "", &URLError{Key: StoreKey, URL: sanitize.URL(raw), Kind: ErrBadURL, Err: fmt.Errorf("store element %s: %s", ids.Quote(elem), problem)}
	}
	if !strings.Contains(raw, "://") {
		return filepath.Join(raw, elem), nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return raw, nil
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + elem
	u.RawPath = ""
	return u.String(), nil
}
