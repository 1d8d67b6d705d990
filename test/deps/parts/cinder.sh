# Cinder (API, scheduler, volume) for test/openstacktest with Options.Cinder:
# the fake volume driver ships in python3-cinder
# (cinder.tests.fake_driver.FakeLoggingVolumeDriver), so no LVM, iSCSI
# target or loop device is needed. Needs the parts of openstack.sh (MariaDB,
# RabbitMQ, Keystone). No systemd unit is ever started.
present() {
  [ -x /usr/bin/cinder-api ] &&
    [ -x /usr/bin/cinder-scheduler ] &&
    [ -x /usr/bin/cinder-volume ] &&
    [ -x /usr/bin/cinder-manage ] &&
    [ -e /usr/lib/python3/dist-packages/cinder/tests/fake_driver.py ]
}
install() {
  apt_install cinder-api cinder-scheduler cinder-volume
}
