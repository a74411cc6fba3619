import Foundation
import TestSupport
import Testing

/// `hadeploy devices` with the committed matrix, whose iPad mini 4 is a Wi-Fi device: its twin
/// (started by `hadeploy virtual`) is listed by usbmuxd as a Network device, which the libimobiledevice
/// peer reaches with `-n`, and the table matches it to mini4 over Wi-Fi.
@Test func devicesMatchesTheWiFiMini4ToItsNetworkEntry() async throws {
    let project = try await Project(commits: 1, tag: "v1.0.0")
    let socket = project.url.appendingPathComponent("usbmuxd.sock")
    let virtual = Process()
    virtual.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    virtual.arguments =
        ["-i"] + HADeployBinary.baseEnvironment(home: project.url).map { "\($0.key)=\($0.value)" }
        + [try await HADeployBinary.path, "virtual", "--only", "mini4", "--socket", socket.path]
    virtual.currentDirectoryURL = project.url
    virtual.standardOutput = FileHandle.nullDevice
    virtual.standardError = FileHandle.nullDevice
    try virtual.run()
    defer {
        virtual.terminate()
        virtual.waitUntilExit()
    }
    let deadline = ContinuousClock.now + .seconds(60)
    while !FileManager.default.fileExists(atPath: socket.path), ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(200))
    }
    try #require(FileManager.default.fileExists(atPath: socket.path), "the virtual usbmuxd did not start")
    let environment = ["USBMUXD_SOCKET_ADDRESS": "UNIX:\(socket.path)"]

    // The Debian peer sees a Network entry only.
    let idevice = Process()
    idevice.executableURL = URL(fileURLWithPath: "/usr/bin/idevice_id")
    idevice.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
    let listed = Pipe()
    idevice.standardOutput = listed
    try idevice.run()
    idevice.waitUntilExit()
    let ids = String(decoding: listed.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    let udid = try #require(ids.split(separator: " ").first.map(String.init), "\(ids)")
    #expect(ids == "\(udid) (Network)\n")

    let unconfigured = try await project.run("devices", environment: environment)
    #expect(unconfigured.status == 0, "\(unconfigured.stderr)")
    #expect(
        unconfigured.stdout.contains("libimobiledevice (usbmuxd, Wi-Fi)")
            && unconfigured.stdout.contains("add it with this udid and network: true"),
        "\(unconfigured.stdout)")

    let devices = try await project.run(
        "devices", environment: environment.merging(["IPAD_MINI4_UDID": udid]) { $1 })
    #expect(devices.status == 0, "\(devices.stderr)")
    let row = try #require(devices.stdout.split(separator: "\n").first { $0.hasPrefix("mini4 ") })
    #expect(row.contains(udid) && row.contains(" yes "), "\(row)")
    #expect(row.contains("Wi-Fi via usbmuxd at"), "\(row)")
    #expect(!devices.stdout.contains("not in devices.yaml"), "\(devices.stdout)")
}
