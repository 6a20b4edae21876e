"""Reports the driver writes to files: loss-report.dat."""
