import HADeployCore
import Testing

@Suite struct SuggestionTests {
    @Test func closeTyposAreSuggested() {
        let targets = ["ipad2", "mini4", "mini5", "iphone", "sim", "sim iphone", "all"]
        #expect(Suggestion.closest(to: "mini6", in: targets) == "mini4")
        #expect(Suggestion.closest(to: "IPAD", in: targets) == "ipad2")
        #expect(Suggestion.closest(to: "iphnoe", in: targets) == "iphone")
        #expect(Suggestion.closest(to: "trasport", in: ["transport", "udid"]) == "transport")
    }

    @Test func unrelatedWordsGetNoSuggestion() {
        #expect(Suggestion.closest(to: "kitchen-wall-display", in: ["ipad2", "mini4"]) == nil)
        #expect(Suggestion.closest(to: "x", in: []) == nil)
    }

    @Test func editDistanceCountsUnicodeScalars() {
        #expect(Suggestion.editDistance("", "abc") == 3)
        #expect(Suggestion.editDistance("kitten", "sitting") == 3)
        #expect(Suggestion.editDistance("café", "cafe") == 1)
    }
}
