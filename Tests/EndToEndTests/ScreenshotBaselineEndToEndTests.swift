import DeployModel
import Foundation
import HADeployCore
import HADeployKit
import HomeAssistant
import ImageCodec
import TestSupport
import Testing

/// Screenshots with a memory, on twins whose screens draw the dashboard's cards from a real Home
/// Assistant: the first verified deploy keeps each screenshot as the device's baseline, an unchanged
/// redeploy is "same", a card added in Home Assistant shows as a changed screen with the baseline,
/// the new screenshot and the difference side by side on the contact sheet (rendered by Chromium).
@Suite(.serialized)
struct ScreenshotBaselineEndToEndTests {
    static let hall: [JSONValue] = [
        ["type": "entities", "title": "Switches", "entities": ["input_boolean.peer_test"]],
        ["type": "markdown", "title": "Welcome"],
    ]

    /// Saves the dashboard's config: one view with these cards.
    static func save(_ ha: HomeAssistantServer, _ name: String, cards: [JSONValue], create: Bool = false)
        async throws
    {
        let connection = try await ha.connected()
        defer { Task { await connection.close() } }
        if create {
            _ = try await connection.send(
                RawRequest("lovelace/dashboards/create", ["url_path": .string(name), "title": "Wall"]))
        }
        _ = try await connection.send(
            RawRequest(
                "lovelace/config/save",
                [
                    "url_path": .string(name),
                    "config": ["title": "Hall wall", "views": [["title": "Hall", "cards": .array(cards)]]],
                ]))
    }

    @Test func aCardAddedInHomeAssistantShowsAsAChangedScreenUntilAccepted() async throws {
        let world = try await DeployWorld(twins: [DeployWorld.defaultTwins[1], DeployWorld.defaultTwins[2]])
        defer { Task { await world.shutdown() } }
        let dashboard = "wall-visual-\(UUID().uuidString.prefix(6).lowercased())"
        try await Self.save(world.ha, dashboard, cards: Self.hall, create: true)
        defer { Task { try? await EvidenceEndToEndTests.deleteDashboard(world.ha, dashboard) } }
        let arguments = [
            "mini4", "kitchen", "--dashboard", dashboard, "--no-build", "--artifacts", "artifacts",
            "--report",
            "report",
        ]
        let baseline = { (device: String) in
            world.root.appendingPathComponent(".hadeploy/baselines/\(device)/\(dashboard).png")
        }

        // First deploy: nothing to compare with; the verified screenshots become the baselines.
        let first = try await world.deploy(arguments)
        #expect(first.status == 0, "\(first.stderr)")
        for device in try world.report().results {
            #expect(
                device.visual?.verdict == .noBaseline, "\(device.id): \(String(describing: device.visual))")
            #expect(device.visual?.baselineUpdated == true)
            let shot = try Data(
                contentsOf: world.root.appendingPathComponent("report/screenshots/\(device.id).png"))
            #expect(
                try Data(contentsOf: baseline(device.id)) == shot,
                "\(device.id): the baseline is that screenshot")
        }
        // Two iPads of one size on one dashboard look alike.
        let parity = try #require(try world.report().parity)
        #expect(
            parity.map { "\($0.reference)/\($0.device) \($0.verdict.rawValue)" } == ["mini4/kitchen same"])
        let kept = try Data(contentsOf: baseline("mini4"))

        // Unchanged redeploy: the same screen.
        let again = try await world.deploy(arguments)
        #expect(again.status == 0, "\(again.stderr)")
        for device in try world.report().results {
            let visual = try #require(device.visual, "\(device.id)")
            #expect(visual.verdict == .same && (visual.matchPercentage ?? 0) >= 99, "\(device.id): \(visual)")
            #expect(visual.diff == nil && visual.baseline == nil)
        }
        #expect(again.stderr.contains("screens: mini4 same (100.0 % like its baseline)"), "\(again.stderr)")

        // A card added on the Home Assistant side: both screens changed, the deploy still succeeds.
        try await Self.save(
            world.ha, dashboard, cards: [["type": "markdown", "title": "Weather"]] + Self.hall)
        let changed = try await world.deploy(arguments)
        #expect(changed.status == 0, "a visual change does not fail a deploy by default: \(changed.stderr)")
        let report = try world.report()
        for device in report.results {
            #expect(device.outcome == .succeeded, "\(device.id): \(device.reason ?? "")")
            let visual = try #require(device.visual, "\(device.id)")
            #expect(visual.verdict.isChange, "\(device.id): \(visual)")
            #expect(
                (visual.matchPercentage ?? 100) < 99 && (visual.differingPixels ?? 0) > 10_000, "\(visual)")
            #expect(visual.baselineUpdated == false, "a changed screen keeps its baseline until accepted")
            let diff = try ImageCodec.decode(
                try Data(contentsOf: world.root.appendingPathComponent("report/\(try #require(visual.diff))"))
            )
            #expect(diff.width == 1536 && diff.height == 2048)
            #expect(
                try Data(
                    contentsOf: world.root.appendingPathComponent("report/\(try #require(visual.baseline))"))
                    == (device.id == "mini4" ? kept : try Data(contentsOf: baseline(device.id))))
        }
        #expect(try Data(contentsOf: baseline("mini4")) == kept)
        try await assertSideBySideInChromium(world.root.appendingPathComponent("report/index.html"))

        // --fail-on-visual-change fails the devices whose screen moved, saying why.
        let strict = try await world.deploy(arguments + ["--fail-on-visual-change"])
        #expect(strict.status == 1)
        for device in try world.report().results {
            #expect(device.outcome == .failed && device.failedStep == "screenshot", "\(device.id)")
            #expect(device.reason?.contains("--accept-screenshots") == true, "\(device.reason ?? "")")
        }

        // Accepted: the new screenshots are the baselines, and the next deploy is the same again.
        let accepted = try await world.deploy(
            arguments + ["--accept-screenshots", "--fail-on-visual-change"])
        #expect(accepted.status == 0, "\(accepted.stderr)")
        #expect(try world.report().results.allSatisfy { $0.visual?.baselineUpdated == true })
        #expect(try Data(contentsOf: baseline("mini4")) != kept)
        let settled = try await world.deploy(arguments + ["--fail-on-visual-change"])
        #expect(settled.status == 0, "\(settled.stderr)")
        #expect(try world.report().results.allSatisfy { $0.visual?.verdict == .same })
    }

    /// The contact sheet, as headless Chromium builds and draws it: baseline, new and diff images
    /// side by side in each changed device's card, and the diff's red on the screen.
    func assertSideBySideInChromium(_ page: URL) async throws {
        func chromium(_ arguments: [String]) async throws -> ProcessOutput {
            let output = try await TestHost.runner.run(
                ProcessCommand(
                    "chromium",
                    [
                        "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        "--window-size=1400,1400",
                    ] + arguments + [page.absoluteString],
                    environment: ["HOME": page.deletingLastPathComponent().path]),
                timeout: .seconds(90))
            #expect(output.status == 0, "chromium: \(output.stderr.suffix(500))")
            return output
        }
        let dom = try await chromium(["--dump-dom"]).stdout
        for device in ["mini4", "kitchen"] {
            let card = try #require(
                dom.components(separatedBy: "<section ").first { $0.contains("data-device=\"\(device)\"") })
            #expect(card.contains("class=\"card wide\""))
            let kinds = card.matches(of: /<figure data-kind="([a-z]+)">/).map { String($0.1) }
            #expect(kinds == ["baseline", "new", "diff"], "\(device): \(kinds)")
            for path in [
                "screenshots/baseline/\(device).png", "screenshots/\(device).png",
                "screenshots/diff/\(device).png",
            ] {
                #expect(card.contains("src=\"\(path)\""), "\(device): \(path)")
            }
            #expect(card.contains("screen: changed a little") || card.contains("screen: different"))
        }
        // The parity list: kitchen against mini4, the same screen.
        #expect(dom.contains("Parity: same dashboard, same screen size"))
        #expect(
            dom.contains("<td>mini4</td><td>kitchen</td>")
                && dom.contains("<td class=\"visual same\">same</td>"),
            "the parity table")
        let shot = page.deletingLastPathComponent().appendingPathComponent("sheet.png")
        _ = try await chromium(["--screenshot=\(shot.path)"])
        let image = try ImageCodec.decode(try Data(contentsOf: shot))
        var red = 0
        for index in stride(from: 0, to: image.pixels.count - 2, by: 3)
        where image.pixels[index] > 200 && image.pixels[index + 1] < 60 && image.pixels[index + 2] < 60 {
            red += 1
        }
        #expect(red > 200, "the diff images are not drawn (\(red) red pixels)")
    }
}
