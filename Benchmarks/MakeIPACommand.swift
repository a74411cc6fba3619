import ArgumentParser
import Foundation

/// `hadeploy-bench make-ipa`: the fixture of BENCHMARKS.md §2 step 1, made outside the measured
/// process (stored zip, so the upload size is the payload size).
struct MakeIPACommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "make-ipa",
        abstract: "Write a stored-zip .ipa (Payload/Bench.app, arm64 header, random payload.bin).")

    @Option(help: "Payload size in MiB.")
    var mebibytes: Int = 200

    @Option(help: "Where to write the .ipa.")
    var output: String

    func run() async throws {
        guard mebibytes > 0 else { throw BenchFailure("--mebibytes must be at least 1") }
        let url = URL(fileURLWithPath: output)
        try FileManager.default.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try BenchApp.makeIPA(
            at: url, name: "Bench", bundleID: "io.hadeploy.bench", executable: .arm64,
            payloadName: "payload.bin", payloadBytes: mebibytes * 1_048_576)
        print("wrote \(url.path)")
    }
}
