"""The README's first command: train a tree on a real dataset (scikit-learn's
bundled Wisconsin breast-cancer data), print held-out accuracy and the top of
the tree. Run with ``python -m gputree.demo``."""
import sys
import time


def main():
    try:
        from sklearn.datasets import load_breast_cancer
        from sklearn.model_selection import train_test_split
    except ImportError:
        sys.exit("The demo uses scikit-learn's bundled datasets: "
                 "pip install 'gputree[demo]' (or '.[demo]' from a checkout).")
    import gputree
    from gputree.backends import cuda_available

    data = load_breast_cancer(as_frame=True)
    X_train, X_test, y_train, y_test = train_test_split(
        data.data, data.target, test_size=0.25, random_state=0, stratify=data.target)
    device = "cuda" if cuda_available() else "cpu"
    model = gputree.DecisionTreeClassifier(max_depth=4, min_samples_leaf=5,
                                           random_state=0, device=device)
    start = time.perf_counter()
    model.fit(X_train, y_train)
    seconds = time.perf_counter() - start
    print(f"gputree {gputree.__version__} on device={device!r}: breast cancer "
          f"({len(X_train)} train / {len(X_test)} test rows, {X_train.shape[1]} features)")
    print(f"fit in {seconds:.2f} s (first call includes JIT compilation)")
    print(f"held-out accuracy: {model.score(X_test, y_test):.4f}  "
          f"depth {model.get_depth()}, {model.get_n_leaves()} leaves\n")
    print("Top of the tree (class 0 = malignant, 1 = benign):")
    print(gputree.export_text(model, max_depth=3))


if __name__ == "__main__":
    main()
