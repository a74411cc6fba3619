import DeviceSpec
import Testing

@Suite struct TargetResolverTests {
    func resolve(_ words: String...) throws -> [String] {
        try TargetResolver(matrix: CommittedMatrixTests.load()).resolve(words).map(\.id)
    }

    @Test func multiWordAliasesMatchLongestFirst() throws {
        #expect(try resolve("sim") == ["sim-ipad"])
        #expect(try resolve("sim", "iphone") == ["sim-iphone"])
        #expect(try resolve("sim iphone") == ["sim-iphone"], "one quoted argument")
        #expect(try resolve("SIM", "iPhone") == ["sim-iphone"])
        #expect(try resolve("sim", "ipad") == ["sim-ipad"])
        #expect(try resolve("iphone") == ["iphone"])
        #expect(try resolve("sim", "iphone", "iphone") == ["sim-iphone", "iphone"])
        #expect(try resolve("iphone", "sim") == ["iphone", "sim-ipad"])
    }

    @Test func allGroupsAndSeveralTargets() throws {
        let everything = try CommittedMatrixTests.load().devices.map(\.id)
        #expect(try resolve("all") == everything)
        #expect(try resolve("ipads") == ["ipad2", "mini4", "mini5"])
        #expect(
            try resolve("sims") == ["sim-ipad", "sim-iphone", "sim-ipadpro-ios9", "sim-ipad5-ios10"])
        #expect(try resolve("mini4", "ipad2") == ["mini4", "ipad2"])
        #expect(try resolve("ipad-2", "ipad2", "ipads") == ["ipad2", "mini4", "mini5"], "no duplicates")
        #expect(try resolve("sim", "ios9") == ["sim-ipadpro-ios9"])
    }

    @Test func anUnknownWordNamesTheClosestAndListsAll() throws {
        let error = #expect(throws: UnknownTargetError.self) { try resolve("mini4", "mini6") }
        #expect(error?.word == "mini6")
        #expect(error?.suggestion == "mini4")
        #expect(error?.exitStatus == .usage)
        let message = try #require(error?.description)
        #expect(message.hasPrefix("unknown target 'mini6' — did you mean 'mini4'?\nValid targets: "))
        for target in [
            "ipad2", "ipad-2", "mini4", "mini5", "iphone", "sim", "sim ipad", "sim iphone", "all", "ipads",
        ] {
            #expect(error?.validTargets.contains(target) == true, "\(target)")
        }

        let far = #expect(throws: UnknownTargetError.self) { try resolve("kitchen-wall-display") }
        #expect(far?.suggestion == nil)
        #expect(far?.description.hasPrefix("unknown target 'kitchen-wall-display'\nValid targets:") == true)
    }

    @Test func aGroupNamedAllReplacesEveryDevice() throws {
        let yaml = SpecFixtures.minimal + "groups:\n  all: [b]\n"
        let matrix = try SpecLoader().load(yaml: yaml, file: "devices.yaml")
        #expect(try TargetResolver(matrix: matrix).resolve(["all"]).map(\.id) == ["b"])
    }
}
