import Foundation
import HADeployCore
import TestSupport
import Testing

/// What users install is what is tested: under `make test` every suite that runs `hadeploy` runs the
/// binary of the archive `make dist` makes (the static release build), not the debug build.
@Suite struct ReleaseArchiveTests {
    @Test func theBinaryUnderTestIsTheArchivesStaticReleaseBinary() async throws {
        let archive = try #require(
            HADeployBinary.distArchive,
            "HADEPLOY_DIST_ARCHIVE is not set: run the suites through `make test` (it builds the release archive and names it), or set it to a dist/hadeploy-*.tar.gz"
        )
        let path = try await HADeployBinary.path
        // The binary under test is byte for byte the one in the archive.
        let listing = try await TestHost.runner.checked(
            ProcessCommand("tar", ["-tzf", archive]), timeout: .seconds(60))
        let member = try #require(
            listing.stdout.split(separator: "\n").first { $0.hasSuffix("/bin/hadeploy") }.map(String.init))
        let shipped = try await TestHost.runner.run(
            ProcessCommand("/bin/sh", ["-c", "tar -xzOf \"$0\" \"$1\" | sha256sum", archive, member]),
            timeout: .seconds(60))
        let tested = try await TestHost.runner.checked(
            ProcessCommand("sha256sum", [path]), timeout: .seconds(60))
        let digest = String(tested.stdout.prefix(64))
        #expect(
            digest.count == 64 && shipped.stdout.hasPrefix(digest), "\(path) is not \(member) of \(archive)")
        // And it is the static build users get: no Swift runtime or Foundation loaded from a toolchain.
        let ldd = try await TestHost.runner.run(ProcessCommand("ldd", [path]), timeout: .seconds(30))
        for library in ["libswiftCore", "libFoundation", "libdispatch"] {
            #expect(
                !ldd.stdout.contains(library), "the binary under test loads \(library): not the release build"
            )
        }
        // Stripped: no symbol table left (the archive's binary was 89 MB with it).
        let symbols = try await TestHost.runner.run(ProcessCommand("nm", [path]), timeout: .seconds(30))
        #expect(symbols.stderr.contains("no symbols"), "the shipped binary is not stripped")
    }
}
