package main

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/drwatch/drwatch/cluster"
	"github.com/spf13/cobra"
)

// Certificate lifetimes. docs/operations.md ("Certificates") explains them:
// the CA outlives several yearly node rotations so a CA rotation is a rare,
// planned event; a node certificate cannot be revoked (there is no CRL), so a
// stolen node key is useful for at most a year, and a yearly rotation is
// frequent enough to stay a practised routine.
// A client certificate belongs to a person or a tool, changes hands more
// easily and is as unrevocable, so it lives a quarter of that.
const (
	defaultCADays     = 5 * 365
	defaultNodeDays   = 365
	defaultClientDays = 90
	day               = 24 * time.Hour
)

// File names inside --dir. Node files carry the node ID so that one
// directory can hold the whole cluster's certificates on the operator's
// workstation; each watcher gets only its own pair.
const (
	caCertFile = "ca.crt"
	caKeyFile  = "ca.key"
)

func nodeCertFile(id string) string { return "node-" + id + ".crt" }
func nodeKeyFile(id string) string  { return "node-" + id + ".key" }

func clientCertFile(name string) string { return "client-" + name + ".crt" }
func clientKeyFile(name string) string  { return "client-" + name + ".key" }

// configNodeID is node.id's rule in cmd/drwatch/config (validate.go idRE),
// stricter than cluster.ValidNodeID; the two must stay in step.
var configNodeID = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// errExists is returned when a file would be overwritten without --force.
var errExists = errors.New("already exists")

// certsInit is `drwatch certs init`.
type certsInit struct {
	dir   string
	name  string
	days  int
	force bool
}

// certsIssue is `drwatch certs issue NODE` (or NAME with --client).
type certsIssue struct {
	dir    string
	hosts  []string
	days   int
	force  bool
	client bool
}

func newCertsCmd() *cobra.Command {
	c := &cobra.Command{
		Use:   "certs",
		Short: "Create the cluster CA and issue node certificates (mutual TLS)",
		Long: `Create the cluster's certificate authority and issue one certificate per
watcher. A node certificate names its node with the URI SAN drwatch://node/<id>
(the identity the other watchers check) and carries the node's addresses and
host names as ordinary SANs, so the same certificate serves Raft, the cluster
RPC and the HTTPS API. Keys are ECDSA P-256, written with mode 0600.

Keep ca.key offline (on the operator's workstation, not on a watcher): it is
needed only to issue and rotate certificates.`,
	}
	asGroup(c)

	in := &certsInit{}
	initCmd := &cobra.Command{
		Use:   "init --dir DIR",
		Short: "Create the cluster CA (ca.crt, ca.key) in DIR",
		Args:  noArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			return in.Run(stdout(c))
		},
	}
	initCmd.Flags().StringVar(&in.dir, "dir", "", "directory for ca.crt and ca.key (created with mode 0700 if missing)")
	initCmd.Flags().StringVar(&in.name, "name", "drwatch cluster CA", "the CA's common name")
	initCmd.Flags().IntVar(&in.days, "days", defaultCADays, "validity in days")
	initCmd.Flags().BoolVar(&in.force, "force", false, "overwrite an existing CA (every node certificate must then be reissued)")

	is := &certsIssue{}
	issueCmd := &cobra.Command{
		Use:   "issue NODE --dir DIR --host ADDR [--host NAME ...] | issue NAME --client --dir DIR",
		Short: "Issue node NODE's certificate (node-NODE.crt/.key), or with --client an API client's (client-NAME.crt/.key)",
		Long: `Issue the certificate of watcher NODE, signed by DIR/ca.crt and DIR/ca.key.
Give every address and host name the node's API is reached by with --host
(the IP of node.api_addr at least): the CLI and browsers check them. Raft does
not: it checks the identity drwatch://node/NODE instead.

With --client, issue an HTTPS API client certificate for NAME (a person or a
tool such as Prometheus) instead: identity drwatch://client/NAME, client
authentication only, 90 days unless --days. Watchers never accept it as a
peer. It is needed where api.client_certs is required; the CLI presents it
with --cert-file and --key-file.`,
		Args: oneArg("issue takes one node ID (or one client name with --client)"),
		RunE: func(c *cobra.Command, args []string) error {
			if is.client {
				if len(is.hosts) > 0 {
					return usageError{errors.New("--host does not apply to a client certificate")}
				}
				if !c.Flags().Changed("days") {
					is.days = defaultClientDays
				}
				return is.RunClient(stdout(c), args[0])
			}
			return is.Run(stdout(c), args[0])
		},
	}
	issueCmd.Flags().StringVar(&is.dir, "dir", "", "directory holding ca.crt and ca.key; the node's files are written there")
	issueCmd.Flags().StringArrayVar(&is.hosts, "host", nil, "IP address or DNS name the node is reached by (repeatable, at least one)")
	issueCmd.Flags().IntVar(&is.days, "days", defaultNodeDays, "validity in days (at most the CA's remaining life)")
	issueCmd.Flags().BoolVar(&is.force, "force", false, "overwrite the node's existing certificate and key (rotation)")
	issueCmd.Flags().BoolVar(&is.client, "client", false, "issue an API client certificate for NAME instead of a node certificate")

	c.AddCommand(initCmd, issueCmd)
	return c
}

// Run creates the CA.
func (in *certsInit) Run(out io.Writer) error {
	if in.dir == "" {
		return usageError{errors.New("--dir is required")}
	}
	if in.days < 1 {
		return usageError{fmt.Errorf("--days %d must be at least 1", in.days)}
	}
	if strings.TrimSpace(in.name) == "" {
		return usageError{errors.New("--name must not be empty")}
	}
	if err := os.MkdirAll(in.dir, 0o700); err != nil {
		return fmt.Errorf("certs dir: %w", err)
	}
	crt, key := filepath.Join(in.dir, caCertFile), filepath.Join(in.dir, caKeyFile)
	if !in.force {
		// Check both before writing either: a half-replaced CA is worse
		// than none.
		if err := refuseExisting(crt, key); err != nil {
			return err
		}
	}
	certPEM, keyPEM, err := cluster.NewCA(in.name, time.Duration(in.days)*day)
	if err != nil {
		return err
	}
	// ca.crt is public (every watcher and every CLI user needs it), so it
	// may be readable by all.
	if err := writePair(crt, key, certPEM, keyPEM, 0o644, in.force); err != nil {
		return err
	}
	ca, _, err := cluster.ParseCA(certPEM, keyPEM)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %s (mode 0644) and %s (mode 0600)\n", crt, key)
	fmt.Fprintf(out, "CA %q valid until %s\n", ca.Subject.CommonName, ca.NotAfter.UTC().Format(time.RFC3339))
	fmt.Fprintf(out, "keep %s off the watchers; next: drwatch certs issue NODE --dir %s --host ADDR\n", caKeyFile, in.dir)
	return nil
}

// Run issues node id's certificate.
func (is *certsIssue) Run(out io.Writer, id string) error {
	if is.dir == "" {
		return usageError{errors.New("--dir is required")}
	}
	if err := cluster.ValidNodeID(id); err != nil {
		return usageError{err}
	}
	if !configNodeID.MatchString(id) {
		// A certificate for an ID no config file can name is useless.
		return usageError{fmt.Errorf("node id %q: node.id must be lower-case letters, digits and '-', 1-63 characters", id)}
	}
	if is.days < 1 {
		return usageError{fmt.Errorf("--days %d must be at least 1", is.days)}
	}
	var hosts []string
	for _, h := range is.hosts {
		if h = strings.TrimSpace(h); h != "" {
			hosts = append(hosts, h)
		}
	}
	if len(hosts) == 0 {
		return usageError{errors.New("at least one --host is required: the address in node.api_addr, so the CLI can verify the API")}
	}
	caPEM, ca, caKey, ttl, err := is.loadCA()
	if err != nil {
		return err
	}
	crt, key := filepath.Join(is.dir, nodeCertFile(id)), filepath.Join(is.dir, nodeKeyFile(id))
	if !is.force {
		if err := refuseExisting(crt, key); err != nil {
			return err
		}
	}
	certPEM, keyPEM, err := cluster.IssueNodeCert(ca, caKey, id, hosts, ttl)
	if err != nil {
		return err
	}
	// Check what was issued the way a peer will: it must chain to the CA
	// and name exactly this node.
	if _, err := cluster.CredentialsFromPEM(caPEM, certPEM, keyPEM); err != nil {
		return fmt.Errorf("issued certificate does not verify: %w", err)
	}
	if err := writePair(crt, key, certPEM, keyPEM, 0o600, is.force); err != nil {
		return err
	}
	leaf, err := parseCertPEM(certPEM)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %s and %s (mode 0600)\n", crt, key)
	fmt.Fprintf(out, "identity %s, SANs %s, valid until %s\n", cluster.IdentityURI(id),
		strings.Join(hosts, " "), leaf.NotAfter.UTC().Format(time.RFC3339))
	return nil
}

// loadCA reads DIR's CA and checks that --days does not outlive it.
func (is *certsIssue) loadCA() (caPEM []byte, ca *x509.Certificate, caKey crypto.Signer, ttl time.Duration, err error) {
	if caPEM, err = os.ReadFile(filepath.Join(is.dir, caCertFile)); err != nil {
		return nil, nil, nil, 0, fmt.Errorf("read ca certificate (run 'drwatch certs init --dir %s' first): %w", is.dir, err)
	}
	caKeyPEM, err := os.ReadFile(filepath.Join(is.dir, caKeyFile))
	if err != nil {
		return nil, nil, nil, 0, fmt.Errorf("read ca key: %w", err)
	}
	if ca, caKey, err = cluster.ParseCA(caPEM, caKeyPEM); err != nil {
		return nil, nil, nil, 0, err
	}
	ttl = time.Duration(is.days) * day
	if now := time.Now(); now.Add(ttl).After(ca.NotAfter) {
		// A certificate is not valid past its CA anyway; refusing makes
		// the operator notice that the CA needs rotating soon.
		left := int(ca.NotAfter.Sub(now) / day)
		return nil, nil, nil, 0, usageError{fmt.Errorf("--days %d outlives the CA, which expires %s (%d days left): pass a smaller --days or rotate the CA (docs/operations.md)",
			is.days, ca.NotAfter.UTC().Format(time.DateOnly), left)}
	}
	return caPEM, ca, caKey, ttl, nil
}

// RunClient issues API client name's certificate.
func (is *certsIssue) RunClient(out io.Writer, name string) error {
	if is.dir == "" {
		return usageError{errors.New("--dir is required")}
	}
	if err := cluster.ValidNodeID(name); err != nil {
		return usageError{fmt.Errorf("client name: %w", err)}
	}
	if is.days < 1 {
		return usageError{fmt.Errorf("--days %d must be at least 1", is.days)}
	}
	caPEM, ca, caKey, ttl, err := is.loadCA()
	if err != nil {
		return err
	}
	crt, key := filepath.Join(is.dir, clientCertFile(name)), filepath.Join(is.dir, clientKeyFile(name))
	if !is.force {
		if err := refuseExisting(crt, key); err != nil {
			return err
		}
	}
	certPEM, keyPEM, err := cluster.IssueClientCert(ca, caKey, name, ttl)
	if err != nil {
		return err
	}
	leaf, err := parseCertPEM(certPEM)
	if err != nil {
		return err
	}
	// Check what was issued the way the API will.
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return fmt.Errorf("issued certificate does not verify: %w", err)
	}
	if err := writePair(crt, key, certPEM, keyPEM, 0o600, is.force); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %s and %s (mode 0600)\n", crt, key)
	fmt.Fprintf(out, "identity %s, client authentication only, valid until %s\n", cluster.ClientIdentityURI(name), leaf.NotAfter.UTC().Format(time.RFC3339))
	return nil
}

func parseCertPEM(b []byte) (*x509.Certificate, error) {
	blk, _ := pem.Decode(b)
	if blk == nil || blk.Type != "CERTIFICATE" {
		return nil, errors.New("no CERTIFICATE pem block")
	}
	return x509.ParseCertificate(blk.Bytes)
}

// refuseExisting fails, naming every file, if any of paths exists.
func refuseExisting(paths ...string) error {
	var found []string
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			found = append(found, p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("check %s: %w", p, err)
		}
	}
	if len(found) > 0 {
		return fmt.Errorf("%s %w; pass --force to replace", strings.Join(found, " and "), errExists)
	}
	return nil
}

// writePair writes a certificate with mode certPerm and its key with mode
// 0600. The key goes first: a certificate without its key is useless, and
// the key is the file that must never be world-readable.
func writePair(crt, key string, certPEM, keyPEM []byte, certPerm os.FileMode, overwrite bool) error {
	if err := writeFile(key, keyPEM, 0o600, overwrite); err != nil {
		return err
	}
	return writeFile(crt, certPEM, certPerm, overwrite)
}

// writeFile writes data to path with mode perm. Without overwrite it
// refuses an existing file (O_EXCL, so a race cannot clobber one). With
// overwrite it writes a temporary file in the same directory and renames
// it, so the old file stays whole until the new one is complete, and the
// mode is perm even if the old file was looser.
func writeFile(path string, data []byte, perm os.FileMode, overwrite bool) error {
	if !overwrite {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%s %w; pass --force to replace", path, errExists)
		}
		if err != nil {
			return fmt.Errorf("create %s: %w", path, err)
		}
		// The umask may have narrowed perm; the documented modes hold
		// whatever the umask (ca.crt is meant to be readable by all).
		if err := f.Chmod(perm); err != nil {
			f.Close()
			return fmt.Errorf("chmod %s: %w", path, err)
		}
		return closeWrite(f, data, path)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	tmp := f.Name()
	if err := f.Chmod(perm); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("chmod %s: %w", path, err)
	}
	if err := closeWrite(f, data, path); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("replace %s: %w", path, err)
	}
	return nil
}

func closeWrite(f *os.File, data []byte, path string) error {
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", path, err)
	}
	return nil
}
