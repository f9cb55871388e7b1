import Foundation
import Testing

@testable import WorkoutServer

/// The wire's date parser gives exactly Foundation's ISO 8601 formatter's date for every form it takes, and
/// refuses every other (nothing is left to the formatter).
@Suite("wire dates")
struct FastISODateTests {
    @Test("random RFC 3339 dates parse to the formatter's date, to the bit")
    func sameAsFormatter() {
        var generator = SystemRandomNumberGenerator()
        var checked = 0
        for _ in 0..<3_000 {
            let year = Int.random(in: 1900...2200, using: &generator)
            let month = Int.random(in: 1...12, using: &generator)
            let day = Int.random(in: 1...28, using: &generator) + (month == 1 ? Int.random(in: 0...3, using: &generator) : 0)
            var text = String(
                format: "%04d-%02d-%02dT%02d:%02d:%02d", year, month, day, Int.random(in: 0...23, using: &generator),
                Int.random(in: 0...59, using: &generator), Int.random(in: 0...59, using: &generator))
            switch Int.random(in: 0...3, using: &generator) {
            case 0: break
            case 1: text += "." + String(Int.random(in: 0...9, using: &generator))
            case 2: text += String(format: ".%02d", Int.random(in: 0...99, using: &generator))
            default: text += String(format: ".%03d", Int.random(in: 0...999, using: &generator))
            }
            if Bool.random(using: &generator) {
                text += "Z"
            } else {
                text += String(
                    format: "%@%02d:%02d", Bool.random(using: &generator) ? "+" : "-",
                    Int.random(in: 0...14, using: &generator), [0, 30, 45][Int.random(in: 0...2, using: &generator)])
            }
            let fast = FastISODate.parse(text)
            let reference = Wire.formatterDate(text)
            #expect(fast != nil, "\(text)")
            #expect(
                fast?.timeIntervalSinceReferenceDate.bitPattern == reference?.timeIntervalSinceReferenceDate.bitPattern,
                "\(text): \(String(describing: fast?.timeIntervalSinceReferenceDate)) vs \(String(describing: reference?.timeIntervalSinceReferenceDate))")
            checked += 1
        }
        #expect(checked == 3_000)
    }

    @Test("forms it does not take are refused, never left to a formatter", arguments: [
        "2026-05-01T07:30:00", "2026-05-01 07:30:00Z", "2026-02-30T07:30:00Z", "2026-05-01T24:00:00Z",
        "2026-05-01T07:30:60Z", "2026-05-01T07:30:00.Z", "2026-05-01T07:30:00+0200",
        "1500-05-01T07:30:00Z", "1899-12-31T23:59:59Z", "2201-01-01T00:00:00Z", "2026-5-01T07:30:00Z",
        "+2026-05-01T07:30:00Z", "99999999-01-01T00:00:00Z", "2026-05-01T07:30:00.1234567890Z",
        "2026-05-01T07:30:00Z ", "２026-05-01T07:30:00Z", "",
    ])
    func refused(_ text: String) {
        #expect(FastISODate.parse(text) == nil)
        #expect(Wire.parseDate(text) == nil)
    }

    @Test("fractions of 4 to 9 digits are kept to the millisecond; lower-case t and z are RFC 3339's too")
    func longFractions() {
        let millisecond = FastISODate.parse("2026-05-01T07:30:00.123Z")
        #expect(millisecond != nil)
        #expect(FastISODate.parse("2026-05-01T07:30:00.1234Z") == millisecond)
        #expect(FastISODate.parse("2026-05-01T07:30:00.123999999Z") == millisecond)
        #expect(FastISODate.parse("2026-05-01t07:30:00.123z") == millisecond)
        #expect(FastISODate.parse("1900-01-01T00:00:00Z") == Wire.formatterDate("1900-01-01T00:00:00Z"))
        #expect(FastISODate.parse("2200-12-31T23:59:59.999Z") == Wire.formatterDate("2200-12-31T23:59:59.999Z"))
    }

    @Test("a leap day and a non-leap year's 29 February")
    func leapDays() {
        #expect(FastISODate.parse("2024-02-29T12:00:00Z") == Wire.formatterDate("2024-02-29T12:00:00Z"))
        #expect(FastISODate.parse("2024-02-29T12:00:00Z") != nil)
        #expect(FastISODate.parse("2100-02-29T12:00:00Z") == nil)
        #expect(FastISODate.parse("2000-02-29T00:00:00.5Z") == Date(timeIntervalSinceReferenceDate: -26_524_800 + 0.5))
    }

    @Test("dates are written as the formatter writes them, to the nearest millisecond")
    func formatSameAsFormatter() {
        var generator = SystemRandomNumberGenerator()
        var dates = [
            Date(timeIntervalSinceReferenceDate: 0), Date(timeIntervalSinceReferenceDate: -0.0005),
            Date(timeIntervalSinceReferenceDate: 0.9999), Date(timeIntervalSince1970: 0),
            Date(timeIntervalSince1970: -1.5), Date(timeIntervalSinceReferenceDate: -26_524_800 + 0.5),
        ]
        for _ in 0..<3_000 {
            dates.append(Date(timeIntervalSinceReferenceDate: Double.random(in: -12_000_000_000...12_000_000_000, using: &generator)))
        }
        for date in dates {
            let fast = FastISODate.format(date)
            #expect(fast != nil)
            #expect(fast == Wire.formatterText(date), "\(date.timeIntervalSinceReferenceDate)")
        }
    }
}
