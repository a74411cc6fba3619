import Foundation

/// A checkout whose iPad 2 (iOS 9.3.5, armv7) is reached over SSH as root with a password from
/// `IPAD2_SSH_PASSWORD`, USB as its fallback: under `--virtual` it gets the jailbroken twin.
/// `withMini4` adds the iPad mini 4 (USB twin, iOS 15.8) and a 30 s verification deadline.
/// `files` (relative path → text) are written before everything is committed and tagged v1.0.0.
public enum JailbreakProject {
    public static func create(at root: URL, withMini4: Bool = false, files: [String: String] = [:])
        async throws
    {
        // Without a dashboard for either device when both run (each opens its default one).
        let dashboard = withMini4 ? "    dashboard: \"\"\n" : ""
        var yaml = "version: 1\n"
        if withMini4 { yaml += "defaults:\n  verification_timeout: 30\n" }
        yaml += """
            flavours:
              legacy: {archs: [armv7, arm64], deployment_target: "9.0", sdk: iphoneos}

            """
        if withMini4 { yaml += "  modern: {archs: [arm64], deployment_target: \"15.0\", sdk: iphoneos}\n" }
        yaml += """
            devices:
              ipad2:
                product_type: iPad2,1
                ios: "9.3.5"
                arch: armv7
                flavour: legacy
                transport: ssh
                fallback_transport: usb
                udid: ${IPAD2_UDID}
                host: ${IPAD2_HOST}

            """
        yaml += dashboard
        yaml += "    ssh: {user: root, legacy_algorithms: true, password_env: IPAD2_SSH_PASSWORD}\n"
        if withMini4 {
            yaml += """
                  mini4:
                    product_type: iPad5,1
                    ios: "15.8"
                    arch: arm64
                    flavour: modern
                    transport: usb
                    udid: ${MINI4_UDID}

                """
            yaml += dashboard
        }
        yaml += "\n"
        try yaml.write(to: root.appendingPathComponent("devices.yaml"), atomically: true, encoding: .utf8)
        for (path, text) in files {
            try text.write(to: root.appendingPathComponent(path), atomically: true, encoding: .utf8)
        }
        try await GitRepository.commitAll(at: root, tag: "v1.0.0")
    }
}
