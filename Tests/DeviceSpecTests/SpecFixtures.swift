/// Small devices.yaml texts for validation tests.
enum SpecFixtures {
    /// Two flavours and two valid devices, `a` (modern, USB) and `b` (legacy, armv7).
    static let minimal = """
        version: 1
        flavours:
          modern:
            archs: [arm64]
            deployment_target: "15.0"
          legacy:
            archs: [armv7, arm64]
            deployment_target: "9.0"
        devices:
          a:
            transport: usb
            ios: "15.8"
            arch: arm64
            flavour: modern
          b:
            transport: usb
            ios: "9.3.5"
            arch: armv7
            flavour: legacy

        """
}
