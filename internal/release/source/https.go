package source

import (
	"context"
	"fmt"
	"net/http"
)

// fetchHTTPS fetches the archive an https URL serves: a 200 answer,
// following at most MaxRedirects redirects, none of them to plain http,
// within the archive limit, checked against Content-Length before the
// body is read. What identifies it is the sha256 of its bytes.
func (c *Client) fetchHTTPS(ctx context.Context, ref *Ref, dir string) (*Fetched, error) {
	if err := c.init(); err != nil {
		return nil, err
	}
	what := "the archive at " + ref.Display()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ref.URL.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "rukh-release-source")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, c.netError(ctx, ref.URL.Host, what, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return nil, &NotFoundError{What: what}
	case http.StatusUnauthorized, http.StatusForbidden:
		return nil, &AuthError{Status: resp.StatusCode, Host: ref.URL.Host, Tried: "no credentials (https sources are fetched without any; publish to a registry for access control)"}
	default:
		return nil, fmt.Errorf("%s answered %s", ref.URL.Host, resp.Status)
	}
	if limit := c.maxArchive(); resp.ContentLength > limit {
		return nil, &TooLargeError{What: what, Size: resp.ContentLength, Limit: limit}
	}
	path, got, _, err := c.save(ctx, ref.URL.Host, what, resp.Body, resp.ContentLength, dir)
	if err != nil {
		return nil, err
	}
	return &Fetched{Ref: ref, Resolved: got, Path: path}, nil
}
