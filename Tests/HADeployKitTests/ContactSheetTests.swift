import Foundation
import HADeployCore
import ImageCodec
import TestSupport
import Testing

@testable import DeployModel
@testable import HADeployKit
@testable import HADeployReporting

/// The contact sheet (report/index.html) rendered by a real headless Chromium (scripts/browser.sh
/// installs it; the test fails without it): one status badge per device, the reason once and short,
/// the details folded.
struct ContactSheetTests {
    static let longReason =
        "the app was installed, but this host cannot launch it: iOS 26 needs devicectl (macOS) or "
        + "pymobiledevice3 with a running tunneld; install pymobiledevice3 and run `sudo pymobiledevice3 "
        + "remote tunneld`\nsecond line: tunneld answered 503 on 127.0.0.1:49151"

    func result(_ id: String, _ outcome: DeviceOutcome, _ verification: Verification, reason: String?)
        -> DeviceResult
    {
        DeviceResult(
            id: id, name: "iPad \(id)", ios: "15.8", transport: "usb", version: "1.2.5 (158)",
            outcome: outcome, reason: reason, failedStep: outcome == .failed ? "launch" : nil,
            install: .installed, verification: verification,
            steps: [StepRecord(name: "install", seconds: 3.2, status: .ok, detail: "12 MB")],
            screenshot: nil, crashReports: [], seconds: 12.5)
    }

    func chromium(_ arguments: [String], page: URL) async throws -> ProcessOutput {
        let output = try await TestHost.runner.run(
            ProcessCommand(
                "chromium",
                [
                    "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                    "--window-size=1100,700",
                ]
                    + arguments + [page.absoluteString],
                environment: ["HOME": page.deletingLastPathComponent().path]),
            timeout: .seconds(90))
        #expect(output.status == 0, "chromium: \(output.stderr.suffix(400))")
        return output
    }

    @Test func eachDeviceShowsOneBadgeTheReasonOnceAndFoldedDetails() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hadeploy-sheet-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let report = DeployReport(
            deployID: "d-1", version: "1.2.5 (158)", startedAt: Date(timeIntervalSince1970: 1_700_000_000),
            finishedAt: Date(timeIntervalSince1970: 1_700_000_060), verify: true, interrupted: false,
            results: [
                result("mini4", .succeeded, .loaded(seconds: 4.2), reason: nil),
                result("mini5", .installedOnly, .notRun, reason: Self.longReason),
                result(
                    "ipad2", .failed, .notLoaded(reason: "Lovelace fetch failed"),
                    reason: "launch failed: the app crashed"),
            ], exitCode: 1)
        try ReportWriter(directory: directory, fileSystem: TestHost.fileSystem).write(report)
        let page = directory.appendingPathComponent("index.html")

        // The DOM Chromium built: one badge in each device's card, with the right label.
        let dom = try await chromium(["--dump-dom"], page: page).stdout
        let cards = dom.components(separatedBy: "<section class=\"card\"").dropFirst()
        #expect(cards.count == 3)
        let expected = ["mini4": "verified", "mini5": "installed only", "ipad2": "failed"]
        for card in cards {
            let id = try #require(card.firstMatch(of: /data-device="([^"]+)"/)?.1)
            let badges = card.matches(of: /<span class="badge [a-z]+">([^<]+)<\/span>/).map { String($0.1) }
            #expect(badges == [expected[String(id)] ?? "?"], "\(id)")
            #expect(card.contains("<details>") && !card.contains("<details open"), "\(id): details folded")
        }
        // The reason once and short (its first line, cut at a word), the whole text only in the details.
        let mini5 = try #require(cards.first { $0.contains("data-device=\"mini5\"") })
        let visible = try #require(mini5.components(separatedBy: "<details>").first)
        #expect(visible.contains("the app was installed, but this host cannot launch it"))
        #expect(visible.contains("…"))
        #expect(!visible.contains("second line"))
        #expect(mini5.components(separatedBy: "second line").count == 2, "the full reason once, folded")
        #expect(dom.contains("3 device(s): 1 verified · 1 installed only · 1 failed"))

        // And drawn: each badge colour is on the screen.
        let shot = directory.appendingPathComponent("sheet.png")
        _ = try await chromium(["--screenshot=\(shot.path)"], page: page)
        let image = try ImageCodec.decode(try Data(contentsOf: shot))
        var found: [String: Int] = [:]
        let colours: [String: [UInt8]] = [
            "verified": [0x1b, 0x87, 0x3f], "installed only": [0xb0, 0x78, 0x00],
            "failed": [0xc6, 0x28, 0x28],
        ]
        for index in stride(from: 0, to: image.pixels.count - 2, by: 3) {
            let pixel = Array(image.pixels[index..<index + 3])
            for (label, colour) in colours
            where zip(pixel, colour).allSatisfy({ abs(Int($0) - Int($1)) <= 3 }) {
                found[label, default: 0] += 1
            }
        }
        for label in colours.keys {
            #expect((found[label] ?? 0) > 100, "the \(label) badge is not drawn (\(found))")
        }
    }
}
