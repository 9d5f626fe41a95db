"""The trust boundary: code under test runs in worker processes; the scorer never imports it."""
