import Foundation

// Public initialisers of the import's value types, for readers outside this module (WorkoutImport's
// Apple Health reader builds steps and comparison rows of its own).

extension TimedStep {
    public init(at time: Date, _ step: ImportStep) {
        self.time = time
        self.step = step
    }
}

extension ComparisonRow {
    public init(_ kind: Kind, number: Int, sport: String, start: Date, device: ComparedFigures, ours: ComparedFigures) {
        self.kind = kind
        self.number = number
        self.sport = sport
        self.start = start
        self.device = device
        self.ours = ours
    }
}
