"""`planner plan --output-kind`: a name the model's outputs lack fails before anything is measured."""

from __future__ import annotations

from trait_models import dense_map_model


def test_an_unknown_output_name_is_a_clear_error_listing_the_names(cli, tmp_path):
    model = dense_map_model(tmp_path / "det.onnx")
    code, out, err = cli("plan", "--model", str(model), "--input", "x:1x3x16x16:float32", "--target", "cpu",
                         "--quick", "--out", str(tmp_path / "plan"), "--output-kind", "logits=dense")
    assert code == 2
    assert "the model has no output named 'logits'" in err and "its outputs are: maps (compared)" in err
    assert not (tmp_path / "plan" / "results.json").exists()


def test_a_bad_kind_is_refused_with_the_kinds(cli, tmp_path):
    model = dense_map_model(tmp_path / "det.onnx")
    code, _, err = cli("plan", "--model", str(model), "--input", "x:1x3x16x16:float32", "--target", "cpu",
                       "--quick", "--out", str(tmp_path / "plan"), "--output-kind", "0=heatmap")
    assert code == 2 and "use one of classes, dense, sequence, ctc, embedding, regression" in err


def test_ctc_on_an_output_that_is_not_per_position_scores_names_its_shape(cli, tmp_path):
    model = dense_map_model(tmp_path / "det.onnx")
    code, _, err = cli("plan", "--model", str(model), "--input", "x:1x3x16x16:float32", "--target", "cpu",
                       "--quick", "--out", str(tmp_path / "plan"), "--output-kind", "maps=ctc")
    assert code == 2
    assert "a ctc output is (batch, positions, classes), and this one is (batch, 1, 16, 16)" in err
    assert not (tmp_path / "plan" / "results.json").exists()
