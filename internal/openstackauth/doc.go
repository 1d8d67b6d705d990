// Package openstackauth owns how drwatch reaches OpenStack: the one
// credentials section of the configuration file ([Credentials]: a
// clouds.yaml entry, or an auth URL with an application credential kept in
// two files), with its keys, documentation and rules ([Credentials.Validate],
// paths relative to the section); turned into gophercloud's options with
// the files read afresh on every call and no secret ever in an error; and
// the shape of an OpenStack resource ID. The octavia probe and the
// OpenStack repairs embed the same section, so a key means one thing and
// is checked one way wherever it appears, and neither imports the other.
//
// It imports the standard library, gophercloud and the leaf packages
// internal/field and internal/regularfile only: never failover, probes or
// cmd.
package openstackauth
