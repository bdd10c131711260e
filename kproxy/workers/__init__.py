"""Worker processes across cores (`runtime.workers`) and the supervisor that keeps them."""
