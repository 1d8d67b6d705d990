package sim

// add adds o's counts to s. A new Stats field gets a line here;
// TestStatsAddMergesEveryField fails until it does.
func (s *Stats) add(o Stats) {
	s.Reports += o.Reports
	s.ReportsCommitted += o.ReportsCommitted
	s.ReportsLean += o.ReportsLean
	s.Commands += o.Commands
	s.CommandsAcked += o.CommandsAcked
	s.Faults += o.Faults
	s.AutoFlips += o.AutoFlips
	s.GroupRuns += o.GroupRuns
	s.GroupAutoFlips += o.GroupAutoFlips
	s.StaleSnapshots += o.StaleSnapshots
	s.DNSFaults += o.DNSFaults
	s.DNSWrites += o.DNSWrites
	s.BatchWrites += o.BatchWrites
	s.BatchedSwaps += o.BatchedSwaps
	s.BatchesRefused += o.BatchesRefused
	s.RemediationActions += o.RemediationActions
	s.Leaderships += o.Leaderships
	s.Virtual += o.Virtual
}
