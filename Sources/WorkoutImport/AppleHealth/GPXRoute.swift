import Foundation
import WorkoutModel

/// Route points of an Apple Health `workout-routes/*.gpx` file (GPX 1.1: `trkpt lat lon` with `ele`,
/// `time` in UTC and un-namespaced `extensions/speed`, `course`, `hAcc`).
enum HealthGPX {
    /// `2025-09-26T17:00:18Z` (optionally with fractional seconds or an offset).
    static func time(_ text: String) -> Date? {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.utf8.count >= 20 else { return nil }
        // The form Apple writes (`2025-09-26T17:00:18Z`) read directly: a formatter per point is slow.
        if trimmed.utf8.count == 20, trimmed.utf8.last == UInt8(ascii: "Z") {
            var compact = Array(trimmed.utf8)
            guard compact[10] == UInt8(ascii: "T") else { return nil }
            compact[10] = UInt8(ascii: " ")
            compact.removeLast()
            // An impossible date in this form (2025-02-31) is refused here, not handed on to be rolled over.
            return HealthDate.parse(String(decoding: compact, as: UTF8.self) + " +0000")
        }
        let formatter = ISO8601DateFormatter()
        if let date = formatter.date(from: trimmed) { return date }
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.date(from: trimmed)
    }

    /// The points of a GPX file (read through `read`) in time order; `keep` filters them as they are read.
    static func points(read: @escaping XMLPullParser.Read, keep: (Date) -> Bool = { _ in true }) throws(XMLStreamError)
        -> [RoutePoint]
    {
        let parser = XMLPullParser(read: read)
        var points: [RoutePoint] = []
        var current: (latitude: Double, longitude: Double)?
        var fields: [String: String] = [:]
        var element: String?
        while let event = try parser.next() {
            switch event {
            case .start(let name, let attributes):
                if name == "trkpt" {
                    let latitude = attributes.first { $0.name == "lat" }.flatMap { Double($0.value) }
                    let longitude = attributes.first { $0.name == "lon" }.flatMap { Double($0.value) }
                    if let latitude, let longitude { current = (latitude, longitude) } else { current = nil }
                    fields = [:]
                } else {
                    element = name
                }
            case .text(let text):
                if current != nil, let element { fields[element] = text }
            case .end(let name):
                element = nil
                guard name == "trkpt", let point = current else { continue }
                current = nil
                guard let date = fields["time"].flatMap(time), keep(date) else { continue }
                func number(_ key: String) -> Double? {
                    fields[key].flatMap { Double($0.trimmingCharacters(in: .whitespacesAndNewlines)) }.flatMap {
                        $0.isFinite ? $0 : nil
                    }
                }
                let routePoint = RoutePoint(
                    date: date, latitude: point.latitude, longitude: point.longitude, altitude: number("ele"),
                    speed: number("speed").flatMap { $0 >= 0 ? $0 : nil },
                    course: number("course").flatMap { $0 >= 0 && $0 < 360 ? $0 : nil },
                    horizontalAccuracy: number("hAcc").flatMap { $0 >= 0 ? $0 : nil })
                if routePoint.isValid { points.append(routePoint) }
            }
        }
        return points.sorted { $0.date < $1.date }
    }
}
