import Testing

/// Parent of every suite in this target. Each suite is serialized (each test runs a second client,
/// pymobiledevice3, a Python process, and the Debian tools against twins in this very process), but
/// the suites run side by side: every test starts its own twin in its own directory with a made-up
/// UDID, so they share no state, and most of a test's time is a client's Python start.
@Suite
struct FidelitySuite {}
