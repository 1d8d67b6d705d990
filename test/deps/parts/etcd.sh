# etcd 3.4 from Debian, the storage of the real kube-apiserver in test/kubetest.
present() {
  command -v etcd >/dev/null 2>&1 && command -v etcdctl >/dev/null 2>&1
}
install() {
  apt_install etcd-server etcd-client
}
