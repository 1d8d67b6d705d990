// Package openstackauth owns how drwatch reaches OpenStack: where Keystone
// credentials come from (a clouds.yaml entry, or an auth URL with an
// application credential kept in two files), turned into gophercloud's
// options with the files read afresh on every call and no secret ever in an
// error, and the shape of an OpenStack resource ID. The octavia probe and
// the OpenStack remediators share it, so neither imports the other.
//
// It imports the standard library and gophercloud only: never failover,
// probes or cmd.
package openstackauth
