import Testing

/// Parent of every suite in this target: serialized, because each test runs a second client
/// (pymobiledevice3, a Python process) and the Debian tools against twins in this very process, on
/// a machine with two cores.
@Suite(.serialized)
struct FidelitySuite {}
