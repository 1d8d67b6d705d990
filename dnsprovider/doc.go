// Package dnsprovider reads and writes the DNS records drwatch manages.
package dnsprovider
