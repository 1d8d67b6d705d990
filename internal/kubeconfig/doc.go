// Package kubeconfig builds a Kubernetes client configuration from the
// kubeconfig file a config field names, for the probes and the repairs
// alike. The file is read through internal/regularfile (a regular file of
// at most 1 MiB), and errors name the field, never the path or the file's
// content: a kubeconfig holds credentials, and its parser quotes what it
// cannot decode.
package kubeconfig
