import Testing

/// Parent of every suite in this target: serialized, because each test drives real tools against an
/// emulator in this process and the CI machine has two cores (parallel suites made the clients hit
/// their own 5 s usbmuxd deadline).
@Suite(.serialized)
struct VirtualDeviceSuite {}
