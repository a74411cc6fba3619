import Foundation
import TestSupport
import Testing

/// A device key names folders and files: the jailbroken twin's state folder (which a `--virtual` run
/// empties before starting the twin), screenshots, crash reports. devices.yaml may come from a pull
/// request: a key that is no plain name is a configuration error at its line, before anything is
/// created or deleted.
@Suite struct DeviceNameTests {
    static func yaml(key: String) -> String {
        """
        version: 1
        flavours:
          legacy: {archs: [armv7, arm64], deployment_target: "9.0", sdk: iphoneos}
        devices:
          \(key):
            product_type: iPad2,1
            ios: "9.3.5"
            arch: armv7
            flavour: legacy
            transport: ssh
            host: 127.0.0.1

        """
    }

    @Test(arguments: [
        ("\"../../x\"", "must start with a letter or a digit"),
        ("a/b", "may only contain letters, digits, '-', '_' and '.'"),
        ("\".\"", "must start with a letter or a digit"),
        ("\"\"", "the device name is empty"),
        (String(repeating: "n", count: 300), "is longer than 64 characters"),
    ])
    func aKeyThatIsNoPlainNameIsRefusedAtItsLineAndNothingIsDeleted(key: String, says: String) async throws {
        let project = try await Project(commits: 1, tag: "v1.0.0")
        try project.write(Self.yaml(key: key), to: "devices.yaml")
        // Where `../../x` points from the twins' folder (.hadeploy/virtual/jailbreak/<id>), which an
        // earlier --virtual run left (without it, `jailbreak/..` does not resolve and nothing is removed).
        let sentinel = project.url.appendingPathComponent(".hadeploy/x")
        try project.write("keep me\n", to: ".hadeploy/x/keep.txt")
        try FileManager.default.createDirectory(
            at: project.url.appendingPathComponent(".hadeploy/virtual/jailbreak"),
            withIntermediateDirectories: true)
        for arguments in [["plan", "all"], ["all", "--no-build", "--virtual", "--no-verify"]] {
            let result = try await HADeployBinary.run(arguments, in: project.url, timeout: .seconds(120))
            #expect(result.status == 78, "\(arguments): \(result.stderr.suffix(1500))")
            #expect(result.stderr.contains("devices.yaml:5:3: error: the device name "), "\(result.stderr)")
            #expect(result.stderr.contains(says), "\(result.stderr)")
            #expect(
                FileManager.default.fileExists(atPath: sentinel.appendingPathComponent("keep.txt").path),
                "\(arguments) deleted \(sentinel.path)")
        }
    }
}
