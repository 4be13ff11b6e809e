"""Long-running operations (google.longrunning): work that outlives the call that started it."""
