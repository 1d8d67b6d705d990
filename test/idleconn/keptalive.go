package idleconn

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// KeptAlive is an HTTPS client connection that has been served a request
// over HTTP/1.1 and is kept alive, idle until its next one: what a client
// with keep-alive leaves open on a server between requests.
type KeptAlive struct {
	net.Conn
	r *bufio.Reader
}

// DialKeptAlive opens a TLS connection to addr from src, GETs path over
// it, and keeps it open. cfg is used for HTTP/1.1 only.
func DialKeptAlive(addr string, src net.IP, cfg *tls.Config, path string) (*KeptAlive, error) {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: src}, Timeout: 5 * time.Second}
	cfg = cfg.Clone()
	cfg.NextProtos = []string{"http/1.1"}
	c, err := tls.DialWithDialer(d, "tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	k := &KeptAlive{Conn: c, r: bufio.NewReader(c)}
	if err := k.Get(path); err != nil {
		_ = c.Close()
		return nil, err
	}
	return k, nil
}

// Get sends one more GET path on k and reads the answer, which must be
// 200 OK and come within 10 s.
func (k *KeptAlive) Get(path string) error {
	_ = k.SetDeadline(time.Now().Add(10 * time.Second))
	defer func() { _ = k.SetDeadline(time.Time{}) }()
	if _, err := fmt.Fprintf(k, "GET %s HTTP/1.1\r\nHost: api\r\n\r\n", path); err != nil {
		return err
	}
	resp, err := http.ReadResponse(k.r, nil)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", path, resp.Status)
	}
	return nil
}
